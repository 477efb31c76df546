import type { RequestListener, Server } from "node:http";
import { join } from "node:path";
import { layeredSeenCache } from "./cache/layered.js";
import { memorySeenCache } from "./cache/memory.js";
import { redisSeenCache } from "./cache/redis.js";
import { type ResolvedConfig, workerPoolSize, workerTuning } from "./config/validate.js";
import { startEmbeddedPostgres, writeConnectionFile } from "./db/embedded.js";
import { prepareLedger } from "./db/prepare.js";
import { databaseAddress } from "./db/wait.js";
import { createPool, type Pool } from "./db/pool.js";
import { createReceiver } from "./edge/receiver.js";
import { startAlerts } from "./alerts/schedule.js";
import { startPruner } from "./prune/schedule.js";
import { startReconciler } from "./replay/reconciler.js";
import { createStatsObserver } from "./stats/observer.js";
import { writeAnswer } from "./adapters/node/io.js";
import { createDuplicateCounter } from "./ledger/cached-duplicates.js";
import { createNodeHandler } from "./adapters/node/receiver.js";
import { type EdgeObserver, observers, type SeenCache } from "./edge/observer.js";
import { createOpsHandler, type NotReadyReason, withOps } from "./edge/ops.js";
import { mountDashboard } from "./dashboard/mount.js";
import { routeFromPath } from "./edge/route.js";
import { answerError } from "./errors.js";
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
  /**
   * Apply the ledger's migrations at start. `false` (a database role without DDL rights): only check them; while
   * any is missing the log names the command to run, `/readyz` answers 503 `migrations_pending`, and the start
   * waits until they are applied.
   * @defaultValue true
   */
  readonly migrate?: boolean;
  /**
   * Stops a start that is still waiting for the database or its migrations: `startService` then closes what it
   * opened and rejects with the signal's reason.
   */
  readonly signal?: AbortSignal;
}

/** A running receiver and/or worker. */
export interface Service {
  /** `http://host:port` when serving. */
  readonly url: string | undefined;
  /** With `serve`: `http://host:port` of the admin listener (`/metrics`, `/healthz`, `/readyz`, `/dashboard/`). */
  readonly adminUrl: string | undefined;
  /**
   * With `serve` and the dashboard enabled: its address on the admin listener; on the demo (the embedded Postgres
   * and no dashboard user configured), a local login link that signs in as `demo`.
   */
  readonly dashboardUrl: string | undefined;
  readonly connectionString: string;
  /** The metrics served on `GET /metrics` (also fed when only the worker runs). */
  readonly metrics: Metrics;
  /** Stops accepting, lets in-flight deliveries and events finish (up to the grace period), closes everything. */
  stop(): Promise<void>;
}

/**
 * Starts the service: the database (embedded when no URL is configured), migrations, the HTTP receiver and the
 * worker, as configured. A database out of reach is waited for with back-off (see `untilDatabase`), the HTTP
 * listeners already up: `/readyz` answers 503 with the reason and webhooks 503 until the start completes.
 * `GET /metrics`, `/healthz` and `/readyz` (see `createOpsHandler`) answer on an admin listener of their own
 * (`config.admin`, loopback by default), never on the public webhook port (docs/architecture.md §4).
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
    // The embedded server is always reached directly.
    const pooler = config.databaseUrl === undefined ? "none" : config.pooler.pooler;
    const admin = createPool({ connectionString, role: "admin", max: 2, pooler });
    closers.push(() => admin.end());
    const metrics = options.metrics ?? createMetrics();

    // The listener comes up first, so that /readyz says why while the start waits for the database or for its
    // migrations; deliveries meanwhile are answered 503 with Retry-After (and counted), as in an outage.
    let notReady: NotReadyReason | undefined = "starting";
    const ops = createOpsHandler({ metrics, db: admin, ledger, log, starting: () => notReady });
    const stats = options.serve ? createStatsObserver({ db: admin, ledger, log }) : undefined;
    // Closed after the server (closers run in reverse), so the last counts are flushed once no request runs.
    if (stats) closers.push(() => stats.close());
    // Duplicates the cache answered, added to the ledger's counts in one statement every few seconds.
    const cachedDuplicates = options.serve ? createDuplicateCounter({ db: admin, ledger, log }) : undefined;
    if (cachedDuplicates) closers.push(() => cachedDuplicates.close());
    const observer = stats ? observers(metrics.observer, stats, cachedDuplicates) : metrics.observer;
    let webhooks: RequestListener = notYet(config, observer);
    let url: string | undefined;
    let adminUrl: string | undefined;
    const dashboard =
      options.serve && config.dashboard.enabled
        ? mountDashboard({ config, connectionString, pooler, ledger, log, closers })
        : undefined;
    if (options.serve) {
      url = await serveHttp((req, res) => webhooks(req, res), config.port, config.host, closers);
      // The ops routes and the dashboard never answer on the public port (docs/architecture.md, "The admin
      // listener").
      adminUrl = await serveHttp(
        withOps(ops, dashboard?.listener ?? ((_req, res) => res.writeHead(404).end())),
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

    await prepareLedger({
      pool: admin,
      schema: config.schema,
      migrate: options.migrate ?? true,
      pooler,
      setup: options.setup,
      log,
      where: databaseAddress(connectionString) ?? "DATABASE_URL",
      signal: options.signal,
      onState: (state) => {
        notReady = state ?? "starting";
      },
    });
    metrics.trackBacklog({ db: admin, ledger, log });

    if (options.work) {
      const work = createPool({
        connectionString,
        role: "work",
        max: workerPoolSize(config),
        pooler,
      });
      closers.push(() => work.end());
      const direct = pooler === "transaction" ? config.pooler.directUrl : connectionString;
      const worker: Worker = startWorker({
        pool: work,
        connectionString: direct ?? null,
        ledger,
        handlers: config.handlers,
        log,
        ...workerTuning(config),
        onAttempt: metrics.onAttempt,
        onOutboxSend: metrics.onOutboxSend,
        onForward: metrics.onForward,
        makePartitions: options.migrate ?? true,
      });
      closers.push(() => worker.stop(config.worker.shutdownGraceMs));
      // The prune's lock is a session's: behind a transaction pooler it runs on the direct URL (config refuses a
      // scheduled prune without one).
      const sessions =
        direct === connectionString || direct === undefined
          ? admin
          : createPool({ connectionString: direct, role: "admin", max: 2 });
      if (sessions !== admin) closers.push(() => sessions.end());
      startSchedules(config, admin, sessions, ledger, log, closers);
    }

    if (options.serve) {
      const ingest = createPool({ connectionString, role: "ingest", pooler });
      closers.push(() => ingest.end());
      const seen = await seenCache(admin, config.schema, options.redisUrl ?? process.env.REDIS_URL, log);
      closers.push(() => seen.close());
      const receiver = createReceiver({
        sources: config.sources,
        db: ingest,
        ledger,
        log,
        observer,
        seen,
        ...(config.replayToken !== undefined && { replayToken: config.replayToken }),
        trustProxy: config.trustProxy,
      });
      webhooks = createNodeHandler(receiver);
    }
    notReady = undefined;
    dashboard?.open();
    const dashboardUrl = dashboard && adminUrl && `${adminUrl}${dashboard.path}`;
    return { url, adminUrl, dashboardUrl, connectionString, metrics, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

// Before the receiver exists: 503 with Retry-After for the configured sources' routes (a provider retries it),
// counted like the receiver's own 503s; 404 for anything else, as the receiver would answer.
function notYet(config: ResolvedConfig, observer: EdgeObserver): RequestListener {
  const known = new Set(config.sources.map((s) => s.name));
  return (req, res) => {
    const route = routeFromPath((req.url ?? "/").split("?")[0] ?? "/", "/webhooks", "/replay");
    if (route === undefined || !known.has(route.source)) {
      writeAnswer(req, res, answerError("not_found"));
      return;
    }
    observer.delivery({ source: route.source, result: "unavailable" });
    writeAnswer(req, res, answerError("unavailable"));
  };
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

// Background work runs in the processes that run the worker: prune takes an advisory lock (a session's, on
// `sessions`) so one instance prunes at a time; concurrent reconcile passes only meet as duplicates in the claim; every instance evaluates the alerts, and
// the ledger's alert state lets one of them send each message.
function startSchedules(
  config: ResolvedConfig,
  pool: Pool,
  sessions: Pool,
  ledger: LedgerContext,
  log: Logger,
  closers: (() => Promise<void>)[],
): void {
  const { prune, reconcile } = config.schedules;
  if (prune) {
    const pruner = startPruner({
      pool: sessions,
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
  const alerts = config.alerts;
  if (alerts && alerts.destinations.length > 0) {
    const running = startAlerts({
      pool,
      ledger,
      sources: config.sources.map((s) => s.name),
      rules: alerts.rules,
      destinations: alerts.destinations,
      everyMs: alerts.everyMs,
      log,
    });
    closers.push(() => running.stop());
  }
}

async function serveHttp(
  handler: RequestListener,
  port: number,
  host: string,
  closers: (() => Promise<void>)[],
): Promise<string> {
  // node:http loads here, not at `import "hookledger"`: an app that mounts the receiver in its own framework, or on
  // a fetch runtime, never starts this server (docs/benchmarks.md, "The footprint").
  const { createServer } = await import("node:http");
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

// 10000 above the webhook port, so each instance's admin port follows from its own yet never lands on a neighbour's
// webhook port (PORT=3000 and PORT=3001 on one host: admin 13000 and 13001; with "+ 1" the second could not start).
// A free one when the webhook port is picked (0) or too high to add to.
const ADMIN_PORT_OFFSET = 10_000;
function adminPortFor(port: number): number {
  return port === 0 || port + ADMIN_PORT_OFFSET > 65535 ? 0 : port + ADMIN_PORT_OFFSET;
}
