import type { ClientConfig } from "pg";
import { type FieldsOf, unknownFields } from "./config/fields.js";
import { type HookledgerConfig, SOURCE_FIELDS, type SourceConfig, WORKER_FIELDS } from "./config/types.js";
import { resolveConfigAfter, workerPoolSize, workerTuning } from "./config/validate.js";
import { migrate } from "./db/migrate.js";
import { checkPooler } from "./db/pooler-check.js";
import { createPool, type Pool } from "./db/pool.js";
import type { PoolerMode } from "./db/pooler.js";
import { createInlineGuard } from "./edge/inline/guard.js";
import type { InlineGuard, InlineMode } from "./edge/inline/types.js";
import { type EdgeObserver, observers, type SeenCache } from "./edge/observer.js";
import { createOpsHandler, type OpsHandler } from "./edge/ops.js";
import type { FailureLimitOptions } from "./edge/failure-limit.js";
import { createReceiver, type Receiver, type ReceiverOptions } from "./edge/receiver.js";
import { memorySeenCache } from "./cache/memory.js";
import { ledgerContext } from "./ledger/context.js";
import { createLogger, type Logger } from "./log.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { type Handler, Handlers } from "./worker/handlers.js";
import type { Outbox } from "./outbox/outbox.js";
import type { PayloadOf, SourceEventType, SourceMap, SourceProviders } from "./worker/payloads.js";
import { startWorker, type Worker } from "./worker/worker.js";
import { createStatsObserver } from "./stats/observer.js";
import { createDuplicateCounter } from "./ledger/cached-duplicates.js";

/**
 * Options of {@link createHookledger}: where the ledger lives, the sources and the handlers.
 *
 * @example
 * const options: HookledgerOptions = {
 *   connectionString: process.env.DATABASE_URL,
 *   sources: [{ name: "stripe", provider: "stripe", secrets: [process.env.STRIPE_WEBHOOK_SECRET ?? ""] }],
 * };
 */
export interface HookledgerOptions {
  /**
   * The Postgres URL. hookledger opens its own small pools on it (claims, worker, admin), each with the session
   * settings its part needs. Give this or `pool`.
   * @example process.env.DATABASE_URL
   */
  readonly connectionString?: string | undefined;
  /**
   * Your app's `pg` Pool, shared: claims run on it in their own READ COMMITTED, synchronous-commit transaction,
   * and handlers write your tables in the event's transaction (see docs/library-mode.md). Give this or
   * `connectionString`.
   */
  readonly pool?: Pool;
  /**
   * `"transaction"` when `connectionString` reaches Postgres through a pooler in transaction mode (PgBouncer's
   * `pool_mode = transaction`): statements go unnamed and the claim's settings are set per transaction
   * (docs/operations.md, "Behind PgBouncer"). Only with `connectionString`.
   * @defaultValue "none"
   * @example pooler: "transaction"
   */
  readonly pooler?: PoolerMode;
  /**
   * With `pooler: "transaction"`, a URL that reaches Postgres directly, for the worker's LISTEN; without it the
   * worker polls.
   * @example directUrl: process.env.DATABASE_DIRECT_URL
   */
  readonly directUrl?: string | undefined;
  /** The sources, as in a config file: `{ name, provider, secrets }` (secrets may be `env("NAME")`). */
  readonly sources: readonly SourceConfig[];
  /** Handlers registered up front; {@link Hookledger.on} adds more. @defaultValue new Handlers() */
  readonly handlers?: Handlers;
  /**
   * The senders of `ctx.outbox.send` (docs/outbox.md); `hl.startWorker()` sends their messages.
   * @defaultValue new Outbox() (only the built-in `http` sender)
   * @example outbox: new Outbox().on("email", sendEmail)
   */
  readonly outbox?: Outbox;
  /** The ledger's schema. @defaultValue `HOOKLEDGER_SCHEMA`, else "hookledger" */
  readonly schema?: string;
  /** Worker settings, as in a config file (concurrency, retry, handlerTimeoutMs, shutdownGraceMs). */
  readonly worker?: HookledgerConfig["worker"];
  /**
   * The inline guard's mode (`hl.guard`). @defaultValue `HOOKLEDGER_MODE`, else "shadow"
   * @example mode: "enforce"
   */
  readonly mode?: InlineMode;
  /** @defaultValue createLogger() */
  readonly log?: Logger;
  /** The token `POST /replay/:source` accepts instead of a signature. Unset: replays are refused. */
  readonly replayToken?: string;
  /** Confirmed-duplicate short-circuit. @defaultValue memorySeenCache() */
  readonly seen?: SeenCache;
  /**
   * Failed verifications per client address before 429 (`ReceiverOptions.failureLimit`); `false` turns it off.
   * @defaultValue 30 a minute
   */
  readonly failureLimit?: ReceiverOptions["failureLimit"];
  /** Count failures per the last `X-Forwarded-For` entry: only behind a proxy that appends it. @defaultValue false */
  readonly trustProxy?: boolean;
  /** Hears every answered delivery, besides the metrics. */
  readonly observer?: EdgeObserver;
}

// `pool`, `log`, `seen` and `observer` are the caller's own objects, not looked into.
const OPTIONS_FIELDS = {
  connectionString: true,
  pool: true,
  pooler: true,
  directUrl: true,
  sources: [SOURCE_FIELDS],
  handlers: true,
  outbox: true,
  schema: true,
  worker: WORKER_FIELDS,
  mode: true,
  log: true,
  replayToken: true,
  seen: true,
  failureLimit: {
    maxFailures: true,
    windowMs: true,
    maxAddresses: true,
  } satisfies FieldsOf<FailureLimitOptions>,
  trustProxy: true,
  observer: true,
} satisfies FieldsOf<HookledgerOptions>;

/**
 * One hookledger inside your app: a {@link Receiver} to hand to any adapter (`createNodeHandler(hl)`,
 * `createExpressHandler(hl)` …), the inline guard, the worker, migrations, the ops routes and `close()`.
 *
 * @example
 * const hl = createHookledger({ connectionString: process.env.DATABASE_URL, sources });
 * await hl.migrate();
 * hl.startWorker();
 * http.createServer(createNodeHandler(hl)).listen(3000);
 */
// biome-ignore lint/suspicious/noExplicitAny: as in `Handlers`, `any` is the empty source map
export interface Hookledger<M extends SourceMap = any> extends Receiver {
  /** The handlers the worker runs. */
  readonly handlers: Handlers;
  /** The inline guard for a route that processes deliveries itself (`createExpressGuard(hl.guard, …)`). */
  readonly guard: InlineGuard;
  /** `GET /metrics`, `/healthz`, `/readyz`: mount with `withOps(hl.ops, …)` or answer with `hl.ops.answer()`. */
  readonly ops: OpsHandler;
  readonly metrics: Metrics;
  /**
   * Registers a handler for events of `type` from `source` (see {@link Handlers.on}).
   * @example hl.on("stripe", "invoice.paid", async (ctx) => { await ctx.tx.query("…", [ctx.event.id]); });
   */
  on<S extends string, T extends string>(
    source: S,
    type: T | SourceEventType<M, S>,
    handler: Handler<PayloadOf<M, S, T>>,
  ): this;
  /** Applies the ledger's migrations (idempotent, safe from many instances at once); returns those applied. */
  migrate(): Promise<string[]>;
  /** Starts the worker in this process (once); `close()` stops it. */
  startWorker(): Worker;
  /**
   * Stops the worker (finishing in-flight events within `worker.shutdownGraceMs`), writes the last delivery counts
   * and closes the pools it opened.
   */
  close(): Promise<void>;
}

/**
 * Creates hookledger for use inside an app: verify, claim, work, observe, with one object. Throws a `ConfigError`
 * listing every problem of the options, an unknown field at any depth among them
 * (`options.worker.concurency: unknown field; did you mean concurrency?`).
 *
 * @example
 * import http from "node:http";
 * import { createHookledger, createNodeHandler, env } from "hookledger";
 *
 * const hl = createHookledger({
 *   connectionString: process.env.DATABASE_URL,
 *   sources: [{ name: "stripe", provider: "stripe", secrets: [env("STRIPE_WEBHOOK_SECRET")] }],
 * }).on("stripe", "invoice.paid", async (ctx) => {
 *   await ctx.tx.query("update invoices set paid = true where stripe_id = $1", [ctx.event.entity?.id]);
 * });
 * await hl.migrate();
 * hl.startWorker();
 * const server = http.createServer(createNodeHandler(hl)).listen(3000);
 * process.once("SIGTERM", () => server.close(() => void hl.close())); // then the process exits by itself
 */
export function createHookledger<const Sources extends readonly SourceConfig[]>(
  options: HookledgerOptions & { readonly sources: Sources },
): Hookledger<SourceProviders<Sources>> {
  // A misspelt option (`connectionstring`) is named as such: the ConfigError below lists it with the others.
  const unknown = unknownFields(options, OPTIONS_FIELDS, "options");
  if (
    unknown.length === 0 &&
    (options.pool === undefined) ===
      (options.connectionString === undefined || options.connectionString === "")
  ) {
    throw new Error(
      "createHookledger needs exactly one of connectionString (e.g. process.env.DATABASE_URL) or pool (your pg Pool)",
    );
  }
  const pooler = options.pooler ?? "none";
  if (pooler !== "none" && (pooler !== "transaction" || options.pool !== undefined)) {
    throw new Error(
      pooler === "transaction"
        ? 'createHookledger: pooler: "transaction" needs connectionString, not pool: hookledger then opens pools that send no named statement'
        : `createHookledger: pooler must be "none" or "transaction", got ${JSON.stringify(pooler)}`,
    );
  }
  const config = resolveConfigAfter(unknown, {
    sources: options.sources,
    handlers: options.handlers ?? new Handlers(),
    ...(options.worker && { worker: options.worker }),
    ...(options.outbox && { outbox: options.outbox }),
    // The database is given here, not read from the environment; the URL is only used to satisfy the resolver.
    database: {
      url: options.connectionString ?? "postgres://pool",
      ...(options.schema && { schema: options.schema }),
    },
  });
  const log = options.log ?? createLogger();
  for (const warning of config.warnings) log.warn(warning);
  const ledger = ledgerContext(config.schema);
  const owned: Pool[] = [];
  const open = (role: "ingest" | "work" | "admin", max?: number): Pool => {
    if (options.pool) return options.pool;
    const pool = createPool({
      connectionString: options.connectionString ?? "",
      role,
      ...(max !== undefined && { max }),
      pooler,
    });
    owned.push(pool);
    return pool;
  };
  const admin = open("admin", 2);
  const ingest = open("ingest");
  const metrics = createMetrics();
  metrics.trackBacklog({ db: admin, ledger, log });

  let worker: Worker | undefined;
  let warnedNoWorker = false;
  // A receiver without a worker anywhere leaves events pending forever; say so once, in the log people read.
  const workerHint: EdgeObserver = {
    delivery(report) {
      if (report.result !== "accepted" || worker || warnedNoWorker) return;
      warnedNoWorker = true;
      log.warn(
        "an event was accepted but no worker runs in this process: call hl.startWorker(), or run `hookledger worker` elsewhere",
      );
    },
  };
  // The per-minute counts behind `hookledger stats` (the duplicate rate a retrofit is judged by).
  const stats = createStatsObserver({ db: admin, ledger, log });
  // Duplicates the cache answered still reach the ledger's counts, written in batches like the statistics.
  const cachedDuplicates = createDuplicateCounter({ db: admin, ledger, log });
  const observer = observers(metrics.observer, stats, cachedDuplicates, options.observer, workerHint);
  const receiver = createReceiver({
    sources: config.sources,
    db: ingest,
    ledger,
    log,
    observer,
    seen: options.seen ?? memorySeenCache(),
    ...(options.replayToken !== undefined && { replayToken: options.replayToken }),
    ...(options.failureLimit !== undefined && { failureLimit: options.failureLimit }),
    ...(options.trustProxy !== undefined && { trustProxy: options.trustProxy }),
  });
  const guard = createInlineGuard({
    sources: config.sources,
    db: ingest,
    ledger,
    log,
    observer,
    ...(options.mode !== undefined && { mode: options.mode }),
  });
  const handlers = config.handlers;
  let closed = false;

  const hl: Hookledger<SourceProviders<Sources>> = {
    log,
    receive: (delivery) => receiver.receive(delivery),
    handlers,
    guard,
    ops: createOpsHandler({ metrics, db: admin, ledger, log }),
    metrics,
    on(source, type, handler) {
      handlers.on(source, type as string, handler as Handler);
      return hl;
    },
    migrate: async () => {
      await checkPooler(admin, pooler);
      return migrate(admin, config.schema);
    },
    startWorker() {
      if (closed) throw new Error("this hookledger is closed");
      worker ??= startWorker({
        pool: open("work", workerPoolSize(config)),
        connectionString: listenTo(options),
        ledger,
        handlers,
        log,
        ...workerTuning(config),
        onAttempt: metrics.onAttempt,
        onOutboxSend: metrics.onOutboxSend,
        onForward: metrics.onForward,
      });
      return worker;
    },
    async close() {
      if (closed) return;
      closed = true;
      await worker?.stop(config.worker.shutdownGraceMs);
      await stats.close();
      await cachedDuplicates.close();
      await Promise.all(owned.map((pool) => pool.end()));
    },
  };
  return hl;
}

// The worker's LISTEN connection needs the database the pool reaches; pg keeps the pool's config in `options`.
// Behind a transaction pooler LISTEN needs the direct URL; without one the worker polls (and says so).
function listenTo(options: HookledgerOptions): string | ClientConfig | null {
  if (options.pooler === "transaction") return options.directUrl || null;
  return (
    options.connectionString ??
    (options.pool as unknown as { options?: ClientConfig } | undefined)?.options ??
    {}
  );
}
