import type { Source } from "../edge/receiver.js";
import { createProvider } from "../providers/index.js";
import { MAX_BATCH } from "../ledger/pick.js";
import { defaultRetryPolicy, type RetryPolicy } from "../worker/backoff.js";
import { Handlers } from "../worker/handlers.js";
import { Outbox } from "../outbox/outbox.js";
import { type ResolvedAlerts, resolveAlerts } from "./alerts.js";
import {
  type ResolvedDatabase,
  type ResolvedPooler,
  resolveDatabase,
  resolveListen,
  resolvePooler,
} from "./database.js";
import { type Configurable, readConfigurable } from "./env.js";
import { knownOnly, unknownFields } from "./fields.js";
import { type ResolvedSchedules, resolveSchedules } from "./schedules.js";
import { GENERIC_FIELDS, providerOptionChecks } from "./provider-options.js";
import { resolveSecrets } from "./secrets.js";
import type { ResolvedForward } from "../forward/destination.js";
import { resolveForward } from "./forward.js";
import { type ResolvedDashboard, resolveDashboard } from "./dashboard.js";
import { CONFIG_FIELDS, type HookledgerConfig, type ProviderName } from "./types.js";

/** A configuration whose every value is checked and resolved. */
export interface ResolvedConfig {
  /** The configured Postgres, or the embedded server when the configuration names none. */
  readonly database: ResolvedDatabase;
  /** `database.url` when `database.kind` is "url"; `undefined` means the embedded server. */
  readonly databaseUrl: string | undefined;
  /** `database.pooler` and `database.directUrl`, resolved. */
  readonly pooler: ResolvedPooler;
  readonly schema: string;
  readonly embeddedPort: number;
  readonly host: string;
  readonly port: number;
  /** With `{ secrets: false }`, each source holds only the secrets that are set, maybe none. */
  readonly sources: readonly Source[];
  /** The replay route's token (`HOOKLEDGER_REPLAY_TOKEN`); unset refuses every replay. */
  readonly replayToken: string | undefined;
  /** The admin listener's address; `port` undefined: the webhook port + 10000 (0 when that is 0 or above 55535). */
  readonly admin: { readonly host: string; readonly port: number | undefined };
  /** Failed verifications are counted per the last `X-Forwarded-For` entry. */
  readonly trustProxy: boolean;
  /** The dashboard's users (their tokens resolved); `enabled` false serves none. */
  readonly dashboard: ResolvedDashboard;
  readonly schedules: ResolvedSchedules;
  /** `undefined` without `alerts` in the configuration. */
  readonly alerts: ResolvedAlerts | undefined;
  /** Legal but risky choices, each naming the field; the service logs them at start. */
  readonly warnings: readonly string[];
  readonly handlers: Handlers;
  readonly outbox: Outbox;
  /** The `forward` of each source that has one, by source name. */
  readonly forwards: ReadonlyMap<string, ResolvedForward>;
  readonly worker: {
    readonly enabled: boolean;
    readonly concurrency: number;
    readonly pollIntervalMs: number;
    readonly handlerTimeoutMs: number;
    readonly batchSize: number;
    readonly batchBudgetMs: number;
    readonly retry: RetryPolicy;
    readonly shutdownGraceMs: number;
  };
}

/** Every problem found in a configuration, each naming the field and the fix. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

const PROVIDERS: readonly ProviderName[] = [
  "stripe",
  "github",
  "standard",
  "awardee",
  "shopify",
  "paddle",
  "slack",
  "generic",
];
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

/** Options of {@link resolveConfig}. */
export interface ResolveOptions {
  /**
   * Check the signing secrets, the schedules' API keys and the alerts' URLs and secrets. `false` is for commands
   * that verify no delivery, run no schedule and send no alert (migrate, stats, events, prune, replay, reconcile):
   * they start without the secrets set.
   * @defaultValue true
   * @example resolveConfig(userConfig, process.env, { secrets: false })
   */
  readonly secrets?: boolean;
  /**
   * Check the alerts' URLs and secrets; `false` for a command that checks the signing secrets but sends no alert
   * (`hookledger send`).
   * @defaultValue the value of `secrets`
   * @example resolveConfig(userConfig, process.env, { alerts: false })
   */
  readonly alerts?: boolean;
}

/**
 * Validates a configuration and resolves its environment references; throws a {@link ConfigError} listing every
 * problem at once. A field the configuration types do not define, at any depth, is one of them:
 * `config.sources[0].maxBodyByts: unknown field; did you mean maxBodyBytes?`.
 *
 * @example
 * const config = resolveConfig(userConfig, process.env);
 */
export function resolveConfig(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv = process.env,
  options: ResolveOptions = {},
): ResolvedConfig {
  return resolveConfigAfter(unknownFields(config, CONFIG_FIELDS, "config"), config, environment, options);
}

/**
 * {@link resolveConfig} with the caller's own check of the fields instead: `problems` (e.g. `createHookledger`'s
 * unknown options) are listed first in the {@link ConfigError}.
 *
 * @example
 * resolveConfigAfter(unknownFields(options, OPTIONS_FIELDS, "options"), config, process.env);
 */
export function resolveConfigAfter(
  earlier: readonly string[],
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv = process.env,
  options: ResolveOptions = {},
): ResolvedConfig {
  const checkSecrets = options.secrets ?? true;
  const problems: string[] = [...earlier];
  const warnings: string[] = [];
  const read = (value: Configurable<string> | undefined) => readConfigurable(value, environment);
  const positiveInt = (field: string, value: unknown, fallback: number): number => {
    if (value === undefined) return fallback;
    const n = typeof value === "string" ? Number(value) : value;
    if (typeof n === "number" && Number.isInteger(n) && n > 0) return n;
    problems.push(`${field}: expected a positive whole number, got ${JSON.stringify(value)}`);
    return fallback;
  };

  const batchSize = (n: number): number => {
    if (n <= MAX_BATCH) return n;
    problems.push(
      `worker.batchSize: at most ${MAX_BATCH} (Postgres caches 64 subtransactions per transaction), got ${n}`,
    );
    return MAX_BATCH;
  };

  if (!Array.isArray(config.sources) || config.sources.length === 0) {
    problems.push(
      "sources: configure at least one source, e.g. { name: 'stripe', provider: 'stripe', secrets: [env('STRIPE_WEBHOOK_SECRET')] }",
    );
  }
  const seen = new Set<string>();
  const sources: Source[] = [];
  const forwards = new Map<string, ResolvedForward>();
  for (const [i, source] of (config.sources ?? []).entries()) {
    const at = `sources[${i}]`;
    if (typeof source.name !== "string" || !NAME.test(source.name)) {
      problems.push(
        `${at}.name: use 1-63 letters, digits, '-' or '_' (it is the URL segment), got ${JSON.stringify(source.name)}`,
      );
      continue;
    }
    if (seen.has(source.name))
      problems.push(`${at}.name: '${source.name}' is configured twice; source names must be unique`);
    seen.add(source.name);
    if (!PROVIDERS.includes(source.provider)) {
      problems.push(
        `${at}.provider: unknown provider ${JSON.stringify(source.provider)}; use one of ${PROVIDERS.join(", ")}`,
      );
      continue;
    }
    const secrets = resolveSecrets(at, source, environment, checkSecrets, problems);
    const options = providerOptionChecks(at, source);
    problems.push(...options.problems);
    warnings.push(...options.warnings);
    // Unset, each provider applies its own documented window (Paddle 5 s, the others 300 s).
    const toleranceSeconds =
      source.toleranceSeconds === undefined
        ? undefined
        : positiveInt(`${at}.toleranceSeconds`, source.toleranceSeconds, 300);
    const maxBodyBytes = positiveInt(`${at}.maxBodyBytes`, source.maxBodyBytes, 1_048_576);
    if (source.forward !== undefined) {
      const forward = resolveForward(
        `${at}.forward`,
        source.provider,
        source.forward,
        environment,
        checkSecrets,
        problems,
      );
      if (forward) forwards.set(source.name, forward);
    }
    if (options.problems.length > 0) continue;
    sources.push({
      name: source.name,
      provider: createProvider(source.provider, {
        ...(toleranceSeconds !== undefined && { toleranceSeconds }),
        ...(source.awardee && { awardee: source.awardee }),
        // Its unknown fields are already problems; the provider itself would throw on them.
        ...(source.generic && { generic: knownOnly(source.generic, GENERIC_FIELDS) }),
      }),
      secrets,
      maxBodyBytes,
    });
  }

  const worker = config.worker ?? {};
  const retry = { ...defaultRetryPolicy, ...worker.retry };
  const embeddedPort = positiveInt(
    "database.embeddedPort",
    config.database?.embeddedPort ?? environment.HOOKLEDGER_EMBEDDED_PORT,
    54329,
  );
  const database = resolveDatabase(config, environment, embeddedPort, problems);
  const handlers = config.handlers ?? new Handlers();
  warnings.push(...unknownHandlerSources(handlers, config.sources ?? []));
  const outbox = config.outbox ?? new Outbox();
  if (!(outbox instanceof Outbox)) {
    problems.push("outbox: expected an Outbox (`new Outbox().on(name, sender)`, imported from hookledger)");
  }
  const schedules = resolveSchedules(config.schedules, sources, environment, problems, checkSecrets);
  const resolved: ResolvedConfig = {
    database,
    databaseUrl: database.kind === "url" ? database.url : undefined,
    pooler: resolvePooler(config, environment, schedules.prune !== undefined, problems),
    schema: config.database?.schema ?? environment.HOOKLEDGER_SCHEMA ?? "hookledger",
    embeddedPort,
    ...resolveListen(config, environment, problems),
    sources,
    replayToken: read(config.replayToken ?? { env: "HOOKLEDGER_REPLAY_TOKEN" }),
    admin: resolveAdmin(config, environment, problems),
    trustProxy: config.trustProxy ?? /^(1|true)$/i.test(environment.HOOKLEDGER_TRUST_PROXY ?? ""),
    dashboard: resolveDashboard(config.dashboard, environment, problems, checkSecrets),
    schedules,
    alerts: resolveAlerts(config.alerts, environment, problems, options.alerts ?? checkSecrets),
    warnings,
    handlers,
    outbox,
    forwards,
    worker: {
      enabled: worker.enabled ?? true,
      concurrency: positiveInt("worker.concurrency", worker.concurrency, 4),
      pollIntervalMs: positiveInt("worker.pollIntervalMs", worker.pollIntervalMs, 1000),
      handlerTimeoutMs: positiveInt("worker.handlerTimeoutMs", worker.handlerTimeoutMs, 30_000),
      batchSize: batchSize(positiveInt("worker.batchSize", worker.batchSize, 50)),
      batchBudgetMs: positiveInt("worker.batchBudgetMs", worker.batchBudgetMs, 1000),
      retry: {
        maxAttempts: positiveInt("worker.retry.maxAttempts", retry.maxAttempts, 10),
        baseDelayMs: positiveInt("worker.retry.baseDelayMs", retry.baseDelayMs, 1000),
        maxDelayMs: positiveInt("worker.retry.maxDelayMs", retry.maxDelayMs, 3_600_000),
      },
      shutdownGraceMs: positiveInt("worker.shutdownGraceMs", worker.shutdownGraceMs, 10_000),
    },
  };
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,50}$/.test(resolved.schema)) {
    problems.push(
      `database.schema: use letters, digits and '_' (starting with a letter), got ${JSON.stringify(resolved.schema)}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return resolved;
}

// A handler registered under a misspelt source name never runs and nothing else says so.
function unknownHandlerSources(handlers: Handlers, sources: readonly { name?: unknown }[]): string[] {
  if (typeof handlers.sources !== "function") return [];
  const names = sources.map((s) => String(s.name));
  return handlers
    .sources()
    .filter((source) => !names.includes(source))
    .map(
      (source) =>
        `handlers: no source named '${source}' (handlers for it will never run); sources are ${names.join(", ")}`,
    );
}

/**
 * The worker settings of a resolved configuration, as `startWorker` takes them.
 *
 * @example
 * startWorker({ pool, connectionString, ledger, handlers, log, ...workerTuning(config) });
 */
export function workerTuning(config: Pick<ResolvedConfig, "worker" | "outbox" | "forwards">) {
  const { concurrency, pollIntervalMs, handlerTimeoutMs, batchSize, batchBudgetMs, retry } = config.worker;
  return {
    concurrency,
    pollIntervalMs,
    handlerTimeoutMs,
    batchSize,
    batchBudgetMs,
    retry,
    outbox: config.outbox,
    forwards: config.forwards,
  };
}

/**
 * The connections of a worker process's pool: one per slot, one more for the outbox's takes and records between
 * the batches, and two more for the forward engine's when a source forwards.
 *
 * @example
 * const work = new Pool({ connectionString, max: workerPoolSize(config) });
 */
export function workerPoolSize(config: Pick<ResolvedConfig, "worker" | "forwards">): number {
  return config.worker.concurrency + 1 + (config.forwards.size > 0 ? 2 : 0);
}

function resolveAdmin(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv,
  problems: string[],
): ResolvedConfig["admin"] {
  const fromEnv = environment.ADMIN_PORT === "" ? undefined : environment.ADMIN_PORT;
  const text = fromEnv ?? readConfigurable(config.admin?.port, environment);
  let port: number | undefined;
  if (text !== undefined) {
    const n = Number(text);
    if (/^\d{1,5}$/.test(text.trim()) && n <= 65535) port = n;
    else {
      const field = fromEnv === undefined ? "admin.port" : "ADMIN_PORT (environment)";
      problems.push(
        `${field}: expected 0-65535, got ${JSON.stringify(text)}; set ADMIN_PORT or the config's admin.port`,
      );
    }
  }
  const host =
    (environment.ADMIN_HOST || undefined) ?? readConfigurable(config.admin?.host, environment) ?? "127.0.0.1";
  return { host, port };
}
