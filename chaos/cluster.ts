import { type SpawnOptions, spawn } from "node:child_process";
import { chown, mkdir, readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { join } from "node:path";

/** The PostgreSQL binaries the chaos suite runs its own cluster with (CHAOS_PG_BIN overrides). */
export const PG_BIN = process.env.CHAOS_PG_BIN ?? "/usr/lib/postgresql/15/bin";

/** A throwaway Postgres cluster on a loopback port. */
export interface Cluster {
  readonly url: string;
  readonly port: number;
  /** `pg_ctl restart -m immediate`: every backend dies at once, the server recovers from its WAL. */
  restartImmediate(): Promise<void>;
  /** kill -9 of the postmaster and every backend at once (a host lost), resolving to the time of the signals. */
  kill(): Promise<number>;
  /** Stops the server (immediate: its data is thrown away). Safe to call twice. */
  stop(): Promise<void>;
}

interface Account {
  readonly uid: number;
  readonly gid: number;
}

/** Runs a binary to completion; rejects with its output when it fails. */
function run(file: string, args: string[], account: Account | undefined): Promise<string> {
  const options: SpawnOptions = { stdio: ["ignore", "pipe", "pipe"] };
  if (account) Object.assign(options, { uid: account.uid, gid: account.gid });
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, options);
    let output = "";
    child.stdout?.on("data", (d) => {
      output += d;
    });
    child.stderr?.on("data", (d) => {
      output += d;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0
        ? resolve(output)
        : reject(new Error(`${file} ${args.join(" ")} exited ${code}:\n${output}`)),
    );
  });
}

async function postgresAccount(): Promise<Account> {
  const uid = Number((await run("id", ["-u", "postgres"], undefined)).trim());
  const gid = Number((await run("id", ["-g", "postgres"], undefined)).trim());
  return { uid, gid };
}

/**
 * Initialises and starts a cluster under `dir` (which must exist and, as root, be enterable by the `postgres` OS
 * user: Postgres refuses to run as root, so as root every binary runs as that user).
 */
export async function startCluster(dir: string, port: number, name = "pg"): Promise<Cluster> {
  return start(dir, port, name, (data, account) =>
    run(
      join(PG_BIN, "initdb"),
      ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
      account,
    ),
  );
}

/** A streaming standby of the cluster on `primaryPort` (pg_basebackup -R), started on `port`; `promote()` ends its recovery. */
export async function startStandby(
  dir: string,
  primaryPort: number,
  port: number,
  name = "standby",
): Promise<Cluster & { promote(): Promise<void> }> {
  let data = "";
  let account: Account | undefined;
  const cluster = await start(dir, port, name, async (d, a) => {
    data = d;
    account = a;
    await run(
      join(PG_BIN, "pg_basebackup"),
      [
        "-h",
        "127.0.0.1",
        "-p",
        String(primaryPort),
        "-U",
        "postgres",
        "-D",
        d,
        "-R",
        "-X",
        "stream",
        "--no-sync",
      ],
      a,
    );
  });
  return {
    ...cluster,
    promote: async () => {
      await run(join(PG_BIN, "pg_ctl"), ["-D", data, "promote", "-w", "-t", "60"], account);
    },
  };
}

async function start(
  dir: string,
  port: number,
  name: string,
  make: (data: string, account: Account | undefined) => Promise<unknown>,
): Promise<Cluster> {
  const account = userInfo().uid === 0 ? await postgresAccount() : undefined;
  const home = join(dir, name);
  await mkdir(home, { mode: 0o700 });
  if (account) await chown(home, account.uid, account.gid);
  const data = join(home, "data");
  const pgLog = join(home, "server.log");
  await make(data, account);
  // fsync off: the faults are process crashes (the kernel keeps what was written), never a power cut.
  const serverOptions = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${home}`,
    "-c max_connections=300",
    "-c fsync=off",
    "-c full_page_writes=off",
  ].join(" ");
  const ctl = (...args: string[]) => run(join(PG_BIN, "pg_ctl"), ["-D", data, ...args], account);
  await ctl("start", "-w", "-t", "60", "-l", pgLog, "-o", serverOptions);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async restartImmediate() {
      await ctl("restart", "-m", "immediate", "-w", "-t", "60", "-l", pgLog, "-o", serverOptions);
    },
    async kill() {
      const pid = Number((await readFile(join(data, "postmaster.pid"), "utf8")).split("\n")[0]);
      // pgrep exits 1 when it finds no child: a postmaster alone is killed all the same.
      const children = await run("pgrep", ["-P", String(pid)], undefined).catch(() => "");
      const killedAt = Date.now();
      for (const victim of [pid, ...children.split("\n").filter(Boolean).map(Number)]) {
        try {
          process.kill(victim, "SIGKILL");
        } catch {}
      }
      return killedAt;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await ctl("stop", "-m", "immediate", "-w", "-t", "30").catch(() => undefined);
    },
  };
}
