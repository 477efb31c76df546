// The public API of hookledger, listed explicitly. test/once/public-api.test.ts holds it to the names README.md and
// docs/ import.

export { createHookledger, type Hookledger, type HookledgerOptions } from "./facade.js";

export { defineConfig, type HookledgerConfig, type ProviderName, type SourceConfig } from "./config/types.js";
export type { SchedulesConfig } from "./config/schedules.js";
export type { AlertRulesConfig, AlertsConfig, AlertWebhookConfig, ResolvedAlerts } from "./config/alerts.js";
export { type Configurable, type Env, type EnvRef, env } from "./config/env.js";
export {
  ConfigError,
  type ResolvedConfig,
  type ResolveOptions,
  resolveConfig,
} from "./config/validate.js";
export type { ResolvedDatabase, ResolvedPooler } from "./config/database.js";

export {
  type CreatePoolOptions,
  createPool,
  isHookledgerPool,
  type Pool,
  type PoolClient,
  type PoolRole,
  withTransaction,
} from "./db/pool.js";
export type { PoolerMode } from "./db/pooler.js";
export { checkPooler, PoolerMismatch } from "./db/pooler-check.js";
export { migrate, migrationsCurrent } from "./db/migrate.js";
export { type EmbeddedDatabase, type EmbeddedOptions, startEmbeddedPostgres } from "./db/embedded.js";

export { type Answer, type ErrorCode, answerError, statusOf } from "./errors.js";
export { MissingPackageError } from "./optional.js";
export {
  createReceiver,
  type Delivery,
  type Receiver,
  type ReceiverOptions,
  type Source,
} from "./edge/receiver.js";
export type { FailureLimitOptions } from "./edge/failure-limit.js";
export { createFetchHandler, type FetchHandlerOptions } from "./adapters/web/receiver.js";
export { createNodeHandler, type NodeHandlerOptions } from "./adapters/node/receiver.js";
export { createFetchGuard, type FetchGuardedHandler, type FetchGuardOptions } from "./adapters/web/guard.js";
export { createNodeGuard, type NodeGuardedHandler, type NodeGuardOptions } from "./adapters/node/guard.js";
export { createInlineGuard, type InlineGuardOptions } from "./edge/inline/guard.js";
export type { InlineAdmission, InlineGuard, InlineMode, InlineTicket } from "./edge/inline/types.js";
export type { DeliveryReport, DeliveryResult, EdgeObserver, SeenCache } from "./edge/observer.js";
export {
  createOpsHandler,
  type NotReadyReason,
  type OpsHandler,
  type OpsOptions,
  withOps,
} from "./edge/ops.js";
export { type LayeredSeenCache, layeredSeenCache } from "./cache/layered.js";
export { type MemorySeenCache, type MemorySeenCacheOptions, memorySeenCache } from "./cache/memory.js";
export { type RedisSeenCache, type RedisSeenCacheOptions, redisSeenCache } from "./cache/redis.js";
export { createMetrics, type Metrics, type MetricsOptions } from "./observability/metrics.js";
export {
  createStatsObserver,
  type DeliveryCounts,
  type StatsObserver,
  type StatsObserverOptions,
} from "./stats/observer.js";

export {
  type BackfillCounts,
  type BackfillFailure,
  type BackfillOptions,
  type BackfillResult,
  type BackfillRow,
  backfillVersions,
} from "./backfill/versions.js";
export type { VersionInput, VersionUnit } from "./ledger/version.js";
export { type ArrivedVia, type ClaimInput, type ClaimResult, claimEvent } from "./ledger/claim.js";
export { type LedgerContext, ledgerContext } from "./ledger/context.js";
export {
  type EventDetail,
  type EventFilter,
  type EventStatus,
  type EventSummary,
  getEvent,
  listEvents,
} from "./ledger/inspect.js";
export { type RequeueFilter, type RequeueReport, requeueEvents } from "./ledger/requeue.js";
export { type EventKey, type RetryResult, retryEvents } from "./ledger/retry.js";

export { type PruneOptions, type PruneReport, PruneRefused, runPrune } from "./prune/run.js";
export { type Pruner, type PrunerOptions, startPruner } from "./prune/schedule.js";
export { REPLAY_WINDOW_MS } from "./prune/windows.js";
export { REPLAY_TOKEN_HEADER } from "./edge/replay-token.js";
export { type ReconcilerOptions, startReconciler } from "./replay/reconciler.js";
export type { ReplayReport } from "./replay/report.js";
export { replayStripe, type StripeReplayOptions } from "./replay/stripe.js";
export type { Outcome } from "./ledger/settle.js";

export { createLogger, type LogFormat, type Logger, type LoggerOptions, silentLogger } from "./log.js";

export { type AwardeeOptions, awardeeProvider } from "./providers/awardee.js";
export { type GenericOptions, genericProvider } from "./providers/generic.js";
export { githubProvider } from "./providers/github.js";
export { type PaddleOptions, paddleProvider } from "./providers/paddle.js";
export { shopifyProvider } from "./providers/shopify.js";
export { type SlackOptions, slackProvider } from "./providers/slack.js";
export { standardProvider } from "./providers/standard.js";
export { type StripeOptions, stripeEventFromJson, stripeProvider } from "./providers/stripe.js";
export type {
  AuthenticateResult,
  EntityRef,
  HeaderBag,
  ParsedEvent,
  ParseResult,
  ProviderReply,
  ParseFailureReason,
  Provider,
  VerifyFailureReason,
  VerifyInput,
  VerifyResult,
  VerifySteps,
} from "./providers/types.js";

export { type Service, type ServiceOptions, startService } from "./service.js";
export { createDashboard, type Dashboard, type DashboardOptions } from "./dashboard/server.js";
export type { DashboardUser } from "./dashboard/auth.js";

export { type Alerts, type AlertsOptions, startAlerts } from "./alerts/schedule.js";
export type {
  AlertData,
  AlertDestination,
  AlertKind,
  AlertRuleName,
  AlertRules,
} from "./alerts/types.js";

export { defaultRetryPolicy, type RetryPolicy, retryDelay } from "./worker/backoff.js";
export type { AttemptReport } from "./worker/attempt.js";
export { type Handler, type HandlerContext, type HandlerEvent, Handlers } from "./worker/handlers.js";
export type {
  PaddleNotification,
  PayloadMap,
  PayloadOf,
  SourceMap,
  SourceProviders,
  StandardWebhookPayload,
} from "./worker/payloads.js";
export { startWorker, type Worker, type WorkerOptions } from "./worker/worker.js";

export {
  defaultOutboxRetry,
  type HttpMessage,
  type HttpSenderOptions,
  httpSender,
  Outbox,
  type OutboxMessage,
  type OutboxOptions,
  type SendCall,
  type Sender,
  SendError,
} from "./outbox/outbox.js";
export type { OutboxWriter, SendOptions } from "./outbox/writer.js";
export type { OutboxSendReport } from "./outbox/deliver.js";
export {
  getOutboxMessage,
  listOutbox,
  type OutboxDetail,
  type OutboxFilter,
  type OutboxStatus,
  type OutboxSummary,
  retryOutbox,
} from "./ledger/outbox-inspect.js";
export type { ForwardConfig } from "./config/forward.js";
export type { ForwardReport } from "./forward/deliver.js";
export {
  type DestinationState,
  enableForwardDestination,
  type ForwardAttempt,
  listForwardAttempts,
  listForwardDestinations,
} from "./ledger/forward-destinations.js";
