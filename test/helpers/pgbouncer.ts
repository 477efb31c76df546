// A real PgBouncer (Debian's, which scripts/test.mjs installs and names in HOOKLEDGER_TEST_PGBOUNCER) in front of
// the test database, on a loopback port of its own. The bench's PgBouncer rows start theirs with it too.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmod, chown, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testDatabaseUrl } from "./db.js";
import { freePort } from "./net.js";

/** A running PgBouncer. */
export interface Bouncer {
  /** A URL to the test database through it, as the test database's user. */
  readonly url: string;
  readonly port: number;
  /** What it wrote to stderr so far (its log). */
  log(): string;
  stop(): Promise<void>;
}

/** Options of {@link startPgbouncer}. */
export interface BouncerOptions {
  readonly mode: "session" | "transaction" | "statement";
  /** `ignore_startup_parameters`. @defaultValue "" (PgBouncer's own: it refuses `options`) */
  readonly ignore?: string;
  /** `default_pool_size`: server connections per database and user. @defaultValue 8 */
  readonly poolSize?: number;
  /** The Postgres it pools. @defaultValue the test database */
  readonly target?: string;
}

/** The PgBouncer binary of this run. */
export const PGBOUNCER = process.env.HOOKLEDGER_TEST_PGBOUNCER ?? "/usr/sbin/pgbouncer";

/**
 * Starts PgBouncer before the test database. PgBouncer refuses to run as root, so as root it runs as the
 * `postgres` OS user.
 */
export async function startPgbouncer(options: BouncerOptions): Promise<Bouncer> {
  const target = new URL(options.target ?? testDatabaseUrl());
  const user = decodeURIComponent(target.username || "postgres");
  const database = target.pathname.replace(/^\//, "") || "postgres";
  const dir = await mkdtemp(join(tmpdir(), "hookledger-pgbouncer-"));
  const port = await freePort();
  const ini = join(dir, "pgbouncer.ini");
  await writeFile(join(dir, "users.txt"), `"${user}" "${decodeURIComponent(target.password)}"\n`);
  await writeFile(
    ini,
    [
      "[databases]",
      `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      `pool_mode = ${options.mode}`,
      `default_pool_size = ${options.poolSize ?? 8}`,
      "max_client_conn = 500",
      `ignore_startup_parameters = ${options.ignore ?? ""}`,
      "",
    ].join("\n"),
  );
  const root = process.getuid?.() === 0;
  const account = root ? postgresAccount() : undefined;
  if (account) {
    await chmod(dir, 0o755);
    for (const file of [dir, ini, join(dir, "users.txt")]) await chown(file, account.uid, account.gid);
  }
  const child = spawn(PGBOUNCER, [ini], {
    stdio: ["ignore", "ignore", "pipe"],
    ...(account && { uid: account.uid, gid: account.gid }),
  });
  let log = "";
  child.stderr?.on("data", (d) => {
    log += d;
  });
  await listening(child, () => log);
  return {
    url: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`,
    port,
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGINT");
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function postgresAccount(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

async function listening(child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!/listening on/i.test(log())) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`pgbouncer did not start:\n${log()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
