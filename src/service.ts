import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { ResolvedConfig } from "./config/validate.js";
import { startEmbeddedPostgres, writeConnectionFile } from "./db/embedded.js";
import { migrate } from "./db/migrate.js";
import { createPool, type Pool } from "./db/pool.js";
import { createReceiver } from "./http/core.js";
import { createNodeHandler } from "./http/node.js";
import { ledgerContext } from "./ledger/context.js";
import type { Logger } from "./log.js";
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
}

/** A running receiver and/or worker. */
export interface Service {
  /** `http://host:port` when serving. */
  readonly url: string | undefined;
  readonly connectionString: string;
  /** Stops accepting, lets in-flight deliveries and events finish (up to the grace period), closes everything. */
  stop(): Promise<void>;
}

/**
 * Starts the service: the database (embedded when no URL is configured), migrations, the HTTP receiver and the
 * worker, as configured.
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
        concurrency: config.worker.concurrency,
        pollIntervalMs: config.worker.pollIntervalMs,
        handlerTimeoutMs: config.worker.handlerTimeoutMs,
        retry: config.worker.retry,
      });
      const running = worker;
      closers.push(() => running.stop(config.worker.shutdownGraceMs));
    }

    let url: string | undefined;
    if (options.serve) {
      const ingest = createPool({ connectionString, role: "ingest" });
      closers.push(() => ingest.end());
      const receiver = createReceiver({ sources: config.sources, db: ingest, ledger, log });
      const server = createServer(createNodeHandler(receiver));
      // Slow senders cannot hold sockets open forever (providers send whole bodies within seconds).
      server.requestTimeout = 30_000;
      server.headersTimeout = 10_000;
      await listen(server, config.port, config.host);
      closers.push(() => close(server));
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : config.port;
      url = `http://${config.host}:${port}`;
    }
    return { url, connectionString, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
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
