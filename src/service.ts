import { createServer, type RequestListener, type Server } from "node:http";
import { join } from "node:path";
import { layeredSeenCache } from "./cache/layered.js";
import { memorySeenCache } from "./cache/memory.js";
import { redisSeenCache } from "./cache/redis.js";
import { type ResolvedConfig, workerTuning } from "./config/validate.js";
import { startEmbeddedPostgres, writeConnectionFile } from "./db/embedded.js";
import { migrate } from "./db/migrate.js";
import { createPool, type Pool } from "./db/pool.js";
import { createReceiver } from "./edge/receiver.js";
import { startPruner } from "./prune/schedule.js";
import { startReconciler } from "./replay/reconciler.js";
import { createStatsObserver } from "./stats/observer.js";
import { createDuplicateCounter } from "./ledger/cached-duplicates.js";
import { createNodeHandler } from "./adapters/node/receiver.js";
import { observers, type SeenCache } from "./edge/observer.js";
import { createOpsHandler, withOps } from "./edge/ops.js";
import { type LedgerContext, ledgerContext } from "./ledger/context.js";
import type { Logger } from "./log.js";
import { createMetrics, type Metrics } from "./observability/metrics.js";
import { startWorker, type Worker } from "./worker/worker.js";

/** Options of {@link startService}. */
export interface ServiceOptions {
  readonly log: Logger;
  /** Serve `POST /webhooks/:source`. */
  readonly serve: boolean;
  /** Run the worker in this process. */
  readonly work: boolean;
  /** Where `.hookledger/` (the embedded database) lives. @defaultValue process.cwd() */
  readonly workDir?: string;
  /** Runs once after the migrations, before anything is served (demo tables, for instance). */
  readonly setup?: (pool: Pool) => Promise<void>;
  /**
   * Redis for the shared confirmed-duplicate cache (an in-process one is always used). Redis being down or flushed
   * never changes an answer; it only sends more duplicates to Postgres.
   * @defaultValue process.env.REDIS_URL; unset: no Redis
   * @example "redis://127.0.0.1:6379/0"
   */
  readonly redisUrl?: string;
  /** The metrics served on `/metrics` and fed by the receiver and the worker. @defaultValue createMetrics() */
  readonly metrics?: Metrics;
  /** Without `serve`: a port for `/metrics`, `/healthz` and `/readyz` alone (0 picks one). */
  readonly metricsPort?: number;
}

/** A running receiver and/or worker. */
export interface Service {
  /** `http://host:port` of the webhooks when serving; of `/metrics`, `/healthz`, `/readyz` in a worker alone. */
  readonly url: string | undefined;
  /** With `serve`: `http://host:port` of the admin listener (`/metrics`, `/healthz`, `/readyz`). */
  readonly adminUrl: string | undefined;
  readonly connectionString: string;
  /** The metrics served on `GET /metrics` (also fed when only the worker runs). */
  readonly metrics: Metrics;
  /** Stops accepting, lets in-flight deliveries and events finish (up to the grace period), closes everything. */
  stop(): Promise<void>;
}

/**
 * Starts the service: the database (embedded when no URL is configured), migrations, the HTTP receiver and the
 * worker, as configured. `GET /metrics`, `/healthz` and `/readyz` (see `createOpsHandler`) answer on an admin
 * listener of their own (`config.admin`, loopback by default), never on the public webhook port, which answers 404
 * for them (docs/architecture.md §4).
 *
 * @example
 * const service = await startService(resolveConfig(config), { log, serve: true, work: true });
 * process.on("SIGTERM", () => service.stop());
 */
export async function startService(config: ResolvedConfig, options: ServiceOptions): Promise<Service> {
  const { log } = options;
  const workDir = options.workDir ?? process.cwd();
  const closers: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const close of closers.reverse()) {
      await close().catch((error) => log.error({ err: (error as Error).message }, "shutdown step failed"));
    }
  };
  try {
    let connectionString = config.databaseUrl;
    if (connectionString === undefined) {
      const embedded = await startEmbeddedPostgres({
        dataDir: join(workDir, ".hookledger", "pg"),
        port: config.embeddedPort,
        log,
      });
      closers.push(() => embedded.stop());
      connectionString = embedded.connectionString;
      await writeConnectionFile(workDir, connectionString);
    }
    const ledger = ledgerContext(config.schema);
    const admin = createPool({ connectionString, role: "admin", max: 2 });
    closers.push(() => admin.end());
    const applied = await migrate(admin, config.schema);
    if (applied.length > 0) log.info({ applied, schema: config.schema }, "migrations applied");
    await options.setup?.(admin);
    const metrics = options.metrics ?? createMetrics();
    metrics.trackBacklog({ db: admin, ledger, log });

    let worker: Worker | undefined;
    if (options.work) {
      const work = createPool({
        connectionString,
        role: "work",
        max: config.worker.concurrency,
      });
      closers.push(() => work.end());
      worker = startWorker({
        pool: work,
        connectionString,
        ledger,
        handlers: config.handlers,
        log,
        ...workerTuning(config),
        onAttempt: metrics.onAttempt,
      });
      const running = worker;
      closers.push(() => running.stop(config.worker.shutdownGraceMs));
      startSchedules(config, admin, ledger, log, closers);
    }

    const ops = createOpsHandler({ metrics, db: admin, ledger, log });
    let url: string | undefined;
    let adminUrl: string | undefined;
    if (options.serve) {
      const ingest = createPool({ connectionString, role: "ingest" });
      closers.push(() => ingest.end());
      const seen = await seenCache(admin, config.schema, options.redisUrl ?? process.env.REDIS_URL, log);
      closers.push(() => seen.close());
      // Closed after the server (closers run in reverse), so the last counts are flushed once no request runs.
      const stats = createStatsObserver({ db: admin, ledger, log });
      closers.push(() => stats.close());
      const cachedDuplicates = createDuplicateCounter({ db: admin, ledger, log });
      closers.push(() => cachedDuplicates.close());
      const receiver = createReceiver({
        sources: config.sources,
        db: ingest,
        ledger,
        log,
        observer: observers(metrics.observer, stats, cachedDuplicates),
        seen,
        ...(config.replayToken !== undefined && { replayToken: config.replayToken }),
        trustProxy: config.trustProxy,
      });
      url = await serveHttp(createNodeHandler(receiver), config.port, config.host, closers);
      adminUrl = await serveHttp(
        withOps(ops, (_req, res) => res.writeHead(404).end()),
        config.admin.port ?? adminPortFor(config.port),
        config.admin.host,
        closers,
      );
    } else if (options.metricsPort !== undefined) {
      // A worker-only process serves just /metrics, /healthz and /readyz.
      url = await serveHttp(
        withOps(ops, (_req, res) => res.writeHead(404).end()),
        options.metricsPort,
        config.host,
        closers,
      );
    }
    return { url, adminUrl, connectionString, metrics, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

// Memory always; Redis too when configured, its keys tied to this schema's oid (a ledger created again under the
// same name never inherits the old one's ids). Redis connects in the background: the service never waits for it.
async function seenCache(
  admin: Pool,
  schema: string,
  redisUrl: string | undefined,
  log: Logger,
): Promise<SeenCache & { close(): Promise<void> }> {
  const memory = memorySeenCache();
  if (!redisUrl) return layeredSeenCache(memory);
  const { rows } = await admin.query<{ oid: string }>(
    "select oid::text as oid from pg_namespace where nspname = $1::text",
    [schema],
  );
  const redis = redisSeenCache({
    url: redisUrl,
    schema,
    ...(rows[0] && { ledgerId: rows[0].oid }),
    log,
  });
  redis.connect().catch(() => {});
  return layeredSeenCache(memory, redis);
}

// Background work runs in the processes that run the worker: prune takes an advisory lock so one instance prunes at
// a time; concurrent reconcile passes only meet as duplicates in the claim.
function startSchedules(
  config: ResolvedConfig,
  pool: Pool,
  ledger: LedgerContext,
  log: Logger,
  closers: (() => Promise<void>)[],
): void {
  const { prune, reconcile } = config.schedules;
  if (prune) {
    const pruner = startPruner({
      pool,
      ledger,
      sources: config.sources.map((s) => ({ name: s.name, provider: s.provider.name })),
      ...prune,
      log,
    });
    closers.push(() => pruner.stop());
  }
  for (const r of reconcile) {
    const reconciler = startReconciler({
      pool,
      ledger,
      source: r.source,
      apiKey: r.apiKey,
      intervalMs: r.everyMs,
      ...(r.sinceMs !== undefined && { sinceMs: r.sinceMs }),
      // The same override the `replay` command reads (a local fake of the events API in tests).
      ...(process.env.HOOKLEDGER_STRIPE_API_BASE && { apiBase: process.env.HOOKLEDGER_STRIPE_API_BASE }),
      log,
    });
    closers.push(() => reconciler.stop());
  }
}

// Next to the webhook port, so each instance's admin port follows from its own; a free one when that is picked too.
function adminPortFor(port: number): number {
  return port === 0 || port === 65535 ? 0 : port + 1;
}

async function serveHttp(
  handler: RequestListener,
  port: number,
  host: string,
  closers: (() => Promise<void>)[],
): Promise<string> {
  const server = createServer(handler);
  // Slow senders cannot hold sockets open forever (providers send whole bodies within seconds).
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await listen(server, port, host);
  closers.push(() => close(server));
  const address = server.address();
  return `http://${host}:${typeof address === "object" && address ? address.port : port}`;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
