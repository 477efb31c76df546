import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createConnection, createServer, type Socket } from "node:net";
import { join } from "node:path";
import pg from "pg";
import { type Cluster, startCluster, startStandby } from "./cluster.js";

/** How the fleet reaches the database: a libpq host list, or one address that is moved to the new primary. */
export type FailoverShape = "host-list" | "moving-endpoint";

/** A failover instead of the fault deck (docs/chaos.md, "Failover"). */
export interface FailoverPlan {
  readonly shape: FailoverShape;
  /** A synchronous standby (`synchronous_standby_names = '*'`), or an asynchronous one. */
  readonly synchronous: boolean;
  /** When the primary is killed, counted from the first delivery. */
  readonly afterMs: number;
}

/** A primary, its streaming standby, and the URL the fleet is given. */
export interface Pair {
  readonly primary: Cluster;
  readonly databaseUrl: string;
  /** The URL of whichever server is the primary now, for the driver's own reads. */
  adminUrl(): string;
  /** kill -9 of the primary's postmaster and backends, `pg_ctl promote` of the standby, then the move. */
  fail(): Promise<{ killedAt: number; promotedAt: number }>;
  stop(): Promise<void>;
}

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function one<R>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as R[];
  } finally {
    await client.end();
  }
}

// What a managed service's DNS name does at a failover: the address stays, the server behind it changes, and the
// connections to the old one break.
function movingEndpoint(port: number) {
  let target = port;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host: "127.0.0.1", port: target });
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on("close", () => open.delete(socket));
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  return {
    listen: () =>
      new Promise<number>((resolve) =>
        server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)),
      ),
    move(to: number) {
      target = to;
      for (const socket of open) socket.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Starts a primary and a streaming standby under `dir`, on free ports, wired as `plan` says. */
export async function startPair(dir: string, ports: [number, number], plan: FailoverPlan): Promise<Pair> {
  const primary = await startCluster(dir, ports[0], "primary");
  const standby = await startStandby(dir, primary.port, ports[1]);
  if (plan.synchronous) {
    // Set after the base backup, so the standby does not inherit it: promoted, it would wait for a standby of its own.
    await one(primary.url, "alter system set synchronous_standby_names = '*'");
    await one(primary.url, "select pg_reload_conf()");
    await waitFor("the standby to be synchronous", async () => {
      const rows = await one<{ s: string }>(primary.url, "select sync_state as s from pg_stat_replication");
      return rows.some((r) => r.s === "sync");
    });
  }
  const proxy = plan.shape === "moving-endpoint" ? movingEndpoint(primary.port) : undefined;
  const proxyPort = await proxy?.listen();
  let current = primary.url;
  return {
    primary,
    databaseUrl:
      proxyPort === undefined
        ? `postgres://postgres@127.0.0.1:${primary.port},127.0.0.1:${standby.port}/postgres?target_session_attrs=read-write`
        : `postgres://postgres@127.0.0.1:${proxyPort}/postgres`,
    adminUrl: () => current,
    async fail() {
      const pid = Number(
        (await readFile(join(dir, "primary", "data", "postmaster.pid"), "utf8")).split("\n")[0],
      );
      const children = await new Promise<string>((resolve) => {
        let out = "";
        const p = spawn("pgrep", ["-P", String(pid)]);
        p.stdout.on("data", (d) => {
          out += d;
        });
        p.on("exit", () => resolve(out));
      });
      const killedAt = Date.now();
      for (const victim of [pid, ...children.split("\n").filter(Boolean).map(Number)]) {
        try {
          process.kill(victim, "SIGKILL");
        } catch {}
      }
      await standby.promote();
      proxy?.move(standby.port);
      current = standby.url;
      return { killedAt, promotedAt: Date.now() };
    },
    async stop() {
      await proxy?.close();
      await standby.stop();
      await primary.stop();
    },
  };
}
