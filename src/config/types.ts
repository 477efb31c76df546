import { ALERTS_FIELDS, type AlertsConfig } from "./alerts.js";
import type { AwardeeOptions } from "../providers/awardee.js";
import type { GenericOptions } from "../providers/generic-options.js";
import type { RetryPolicy } from "../worker/backoff.js";
import type { PoolerMode } from "../db/pooler.js";
import type { Handlers } from "../worker/handlers.js";
import type { Outbox } from "../outbox/outbox.js";
import { type Configurable, ENV_REF_FIELDS } from "./env.js";
import { FORWARD_FIELDS, type ForwardConfig } from "./forward.js";
import type { FieldsOf } from "./fields.js";
import { AWARDEE_FIELDS, GENERIC_FIELDS } from "./provider-options.js";
import { SCHEDULES_FIELDS, type SchedulesConfig } from "./schedules.js";

/** The providers a source can name (docs/architecture.md §5). */
export type ProviderName =
  | "stripe"
  | "github"
  | "standard"
  | "awardee"
  | "shopify"
  | "paddle"
  | "slack"
  | "generic";

/** One inbound endpoint, `POST /webhooks/{name}`. */
export interface SourceConfig {
  /** The route segment and the ledger's `source` column: letters, digits, `-` and `_`. @example "stripe-eu" */
  readonly name: string;
  readonly provider: ProviderName;
  /**
   * Every active signing secret; any may match, and the ledger row records which one did (rotation: add the new
   * secret, deploy, roll it at the provider, then remove the old one). Empty secrets refuse to start, except
   * `env.optional(…)` ones, which are left out; at least one must be set. Commands that verify no delivery
   * (migrate, stats, events, prune, replay, reconcile) do not read them.
   * @example [env("STRIPE_WEBHOOK_SECRET"), env.optional("STRIPE_WEBHOOK_SECRET_OLD")]
   */
  readonly secrets: readonly Configurable<string>[];
  /**
   * How far a signed timestamp may lie from now, either way, in seconds (timestamped schemes only: stripe,
   * standard, paddle, slack, and awardee or generic with a timestamp header).
   * @defaultValue the provider's documented tolerance: 5 for paddle (Paddle's own), 300 for the others
   * @example { name: "paddle", provider: "paddle", secrets: [env("PADDLE_WEBHOOK_SECRET")], toleranceSeconds: 30 }
   */
  readonly toleranceSeconds?: number;
  /**
   * Largest accepted body in bytes.
   * @defaultValue 1_048_576 (1 MiB); GitHub caps its own payloads at 25 MB
   */
  readonly maxBodyBytes?: number;
  /** Options of the `awardee` provider, whose signature scheme is configurable. */
  readonly awardee?: AwardeeOptions;
  /**
   * Options of the `generic` provider (required for it): signature header, algorithm, encoding, id and type.
   * @example
   * { name: "acme", provider: "generic", secrets: [env("ACME_WEBHOOK_SECRET")],
   *   generic: { signatureHeader: "x-acme-signature", algorithm: "sha256", encoding: "hex", idPointer: "/id", typePointer: "/type" } }
   */
  readonly generic?: GenericOptions;
  /**
   * Sends each verified, deduplicated event of this source on to a destination, signed as Standard Webhooks with
   * the provider's bytes unchanged, besides any handlers (docs/forwarding.md). The processes that run the worker send.
   * @example forward: { url: env("BILLING_WEBHOOK_URL"), secret: env("FORWARD_SECRET"), ordering: "entity" }
   */
  readonly forward?: ForwardConfig;
}

/**
 * The whole configuration of a hookledger service.
 *
 * @example
 * export default defineConfig({
 *   sources: [{ name: "stripe", provider: "stripe", secrets: [env("STRIPE_WEBHOOK_SECRET")] }],
 *   handlers: new Handlers().on("stripe", "invoice.paid", async (ctx) => { ... }),
 * });
 */
export interface HookledgerConfig {
  readonly database?: {
    /**
     * The Postgres URL. Absent: `DATABASE_URL` when it is set, else an embedded Postgres that keeps its data under
     * `.hookledger/` in the working directory (the demo). Given, it must resolve: `env("DATABASE_URL")` with the
     * variable unset refuses to start (`env.optional(…)` falls back to the embedded server instead).
     * @defaultValue env.optional("DATABASE_URL")
     * @example url: env("DATABASE_URL")
     */
    readonly url?: Configurable<string>;
    /** The ledger's schema. @defaultValue env("HOOKLEDGER_SCHEMA") or "hookledger" */
    readonly schema?: string;
    /** Port of the embedded Postgres. @defaultValue 54329 */
    readonly embeddedPort?: number;
    /**
     * `"transaction"` when `url` reaches Postgres through a pooler in transaction mode (PgBouncer's
     * `pool_mode = transaction`): statements go unnamed and the settings the claim rests on are set per
     * transaction (docs/operations.md, "Behind PgBouncer"). `HOOKLEDGER_DATABASE_POOLER` in the environment beats it.
     * @defaultValue "none"
     * @example pooler: "transaction"
     */
    readonly pooler?: PoolerMode;
    /**
     * With `pooler: "transaction"`, a URL that reaches Postgres directly, for what needs a session of its own: the
     * worker's LISTEN (without it the worker polls) and the scheduled prune's lock (required with `schedules.prune`).
     * @defaultValue env.optional("DATABASE_DIRECT_URL")
     * @example directUrl: env("DATABASE_DIRECT_URL")
     */
    readonly directUrl?: Configurable<string>;
  };
  /** The listening address; `HOST` in the environment beats it. @defaultValue "127.0.0.1" */
  readonly host?: Configurable<string>;
  /** The listening port (0 picks a free one); `PORT` in the environment beats it. @defaultValue 3000 */
  readonly port?: Configurable<number>;
  /**
   * The admin listener of `hookledger serve`: `/metrics`, `/healthz` and `/readyz`, kept off the public webhook
   * port. `ADMIN_PORT` and `ADMIN_HOST` in the environment beat these.
   * @defaultValue `{ host: "127.0.0.1", port: <the webhook port + 10000, or 0 when that is 0 or above 55535> }`
   * @example admin: { port: 9464, host: "0.0.0.0" } // a scraper on another host
   */
  readonly admin?: { readonly port?: Configurable<number>; readonly host?: Configurable<string> };
  /**
   * The web dashboard on the admin listener (`/dashboard/`) and `hookledger dashboard` (docs/dashboard.md). Each
   * user signs in with a token; what a user does (retry, requeue) is recorded under the user's name.
   * `HOOKLEDGER_DASHBOARD_TOKEN` in the environment adds a user named `admin`. Without any user the dashboard
   * refuses every sign-in, except on the demo (the embedded Postgres), which prints a local login link.
   * @example dashboard: { users: [{ name: "alice", token: env("ALICE_DASHBOARD_TOKEN") }] }
   */
  readonly dashboard?: {
    /** Who may sign in: a name (shown in the record of actions) and a token of at least 16 characters. */
    readonly users?: readonly { readonly name: string; readonly token: Configurable<string> }[];
    /** `false` serves no dashboard at all. @defaultValue true */
    readonly enabled?: boolean;
  };
  /**
   * Count failed verifications against the last `X-Forwarded-For` entry (the address a proxy in front appended)
   * instead of the connection's. Only behind such a proxy: otherwise any client picks its own address.
   * @defaultValue env("HOOKLEDGER_TRUST_PROXY") is "true" or "1", else false
   */
  readonly trustProxy?: boolean;
  readonly sources: readonly SourceConfig[];
  /**
   * The token `POST /replay/:source` accepts instead of a signature (`hookledger replay … --via URL` sends it in
   * `x-hookledger-replay-token`). Unset: every replay is refused (fail closed).
   * @defaultValue env("HOOKLEDGER_REPLAY_TOKEN")
   * @example replayToken: env("HOOKLEDGER_REPLAY_TOKEN")
   */
  readonly replayToken?: Configurable<string>;
  /** Prune and reconcile on an interval. */
  readonly schedules?: SchedulesConfig;
  /**
   * Alerts sent by the processes that run the worker, to Slack and to URLs (docs/monitoring.md, "Alerts"). Their
   * URLs and secrets are read only by `serve` and `worker`.
   * @defaultValue no alerts
   * @example alerts: { slack: env("SLACK_ALERT_WEBHOOK_URL"), rules: { backlogAge: { over: "10m" } } }
   */
  readonly alerts?: AlertsConfig;
  readonly handlers?: Handlers;
  /**
   * The senders of `ctx.outbox.send` and how their messages are sent (docs/outbox.md); the processes that run the
   * worker send. @defaultValue new Outbox() (only the built-in `http` sender)
   * @example outbox: new Outbox().on("email", sendEmail)
   */
  readonly outbox?: Outbox;
  readonly worker?: {
    /** Run the worker inside `serve`. @defaultValue true */
    readonly enabled?: boolean;
    /** @defaultValue 4 */
    readonly concurrency?: number;
    /** @defaultValue 1000 */
    readonly pollIntervalMs?: number;
    /** @defaultValue 30000 */
    readonly handlerTimeoutMs?: number;
    /** Most events one batch runs in one transaction, 1 to 64 (`startWorker`'s `batchSize`). @defaultValue 50 */
    readonly batchSize?: number;
    /** A batch starts no new event this long after its pick (`startWorker`'s `batchBudgetMs`). @defaultValue 1000 */
    readonly batchBudgetMs?: number;
    readonly retry?: Partial<RetryPolicy>;
    /** How long SIGTERM waits for running events. @defaultValue 10000 */
    readonly shutdownGraceMs?: number;
  };
}

/** The fields of a source (see `unknownFields`); its `awardee` and `generic` options are looked into too. */
export const SOURCE_FIELDS = {
  name: true,
  provider: true,
  secrets: [ENV_REF_FIELDS],
  toleranceSeconds: true,
  maxBodyBytes: true,
  awardee: AWARDEE_FIELDS,
  generic: GENERIC_FIELDS,
  forward: FORWARD_FIELDS,
} satisfies FieldsOf<SourceConfig>;

type Worker = NonNullable<HookledgerConfig["worker"]>;
type Dashboard = NonNullable<HookledgerConfig["dashboard"]>;

/** The fields of `worker` (see `unknownFields`), also `createHookledger`'s option. */
export const WORKER_FIELDS = {
  enabled: true,
  concurrency: true,
  pollIntervalMs: true,
  handlerTimeoutMs: true,
  batchSize: true,
  batchBudgetMs: true,
  retry: { maxAttempts: true, baseDelayMs: true, maxDelayMs: true } satisfies FieldsOf<RetryPolicy>,
  shutdownGraceMs: true,
} satisfies FieldsOf<Worker>;

/**
 * The fields of a {@link HookledgerConfig} at every depth: a field it lacks refuses to start
 * (`config.workr: unknown field; did you mean worker?`). `handlers` and `outbox` are not looked into: they are a
 * `Handlers` and an `Outbox`.
 */
export const CONFIG_FIELDS = {
  database: {
    url: ENV_REF_FIELDS,
    schema: true,
    embeddedPort: true,
    pooler: true,
    directUrl: ENV_REF_FIELDS,
  } satisfies FieldsOf<NonNullable<HookledgerConfig["database"]>>,
  host: ENV_REF_FIELDS,
  port: ENV_REF_FIELDS,
  admin: { port: ENV_REF_FIELDS, host: ENV_REF_FIELDS } satisfies FieldsOf<
    NonNullable<HookledgerConfig["admin"]>
  >,
  dashboard: {
    users: [
      { name: true, token: ENV_REF_FIELDS } satisfies FieldsOf<NonNullable<Dashboard["users"]>[number]>,
    ],
    enabled: true,
  } satisfies FieldsOf<Dashboard>,
  trustProxy: true,
  sources: [SOURCE_FIELDS],
  replayToken: ENV_REF_FIELDS,
  schedules: SCHEDULES_FIELDS,
  alerts: ALERTS_FIELDS,
  handlers: true,
  outbox: true,
  worker: WORKER_FIELDS,
} satisfies FieldsOf<HookledgerConfig>;

/**
 * Identity function that gives a config file its types.
 *
 * @example
 * // hookledger.config.mjs
 * import { defineConfig, env } from "hookledger";
 * export default defineConfig({ sources: [{ name: "github", provider: "github", secrets: [env("GITHUB_WEBHOOK_SECRET")] }] });
 */
export function defineConfig(config: HookledgerConfig): HookledgerConfig {
  return config;
}
