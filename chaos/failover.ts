import { createConnection, createServer, type Socket } from "node:net";
import pg from "pg";
import { SOURCE } from "./app-config.js";
import { type Cluster, startCluster, startStandby } from "./cluster.js";
import { until } from "./wait.js";

/** How the fleet reaches the database: a libpq host list, or one address that is moved to the new primary. */
export type FailoverShape = "host-list" | "moving-endpoint";

/** A failover instead of the fault deck (docs/chaos.md, "Failover"). */
export interface FailoverPlan {
  readonly shape: FailoverShape;
  /** A synchronous standby (`synchronous_standby_names = '*'`), or an asynchronous one. */
  readonly synchronous: boolean;
  /** When the primary is killed, counted from the first delivery. */
  readonly afterMs: number;
  /** Stop the standby's replication this long before the kill: a standby that lags (the oracle's own test). */
  readonly cutReplicationMs?: number;
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
    const synchronous = await until(
      async () => {
        const rows = await one<{ s: string }>(primary.url, "select sync_state as s from pg_stat_replication");
        return rows.some((r) => r.s === "sync");
      },
      30_000,
      100,
    );
    if (!synchronous) throw new Error("the standby did not become synchronous within 30 s");
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
      if (plan.cutReplicationMs !== undefined) {
        // An empty primary_conninfo stops the WAL receiver at the reload (PostgreSQL 13 and later).
        await one(standby.url, "alter system set primary_conninfo = ''");
        await one(standby.url, "select pg_reload_conf()");
        await new Promise((resolve) => setTimeout(resolve, plan.cutReplicationMs));
      }
      const killedAt = await primary.kill();
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

/** One answer the simulated provider acted on (status 0: none), with when its POST was sent and answered. */
export interface Answer {
  readonly id: string;
  readonly status: number;
  /** Answered `accepted`: a new claim committed, never a duplicate a receiver's cache could answer alone. */
  readonly accepted: boolean;
  readonly sentAt: number;
  readonly answeredAt: number;
}

/** What a failover did to the deliveries (docs/chaos.md, "Failover"). */
export interface FailoverWindow {
  readonly promotedMs: number;
  /** The first POST sent after the kill whose claim was accepted (committed on the new primary): when it was sent,
   * and when its answer came. */
  readonly firstAcceptSentMs: number;
  readonly firstAcceptAnsweredMs: number;
  /** What the POSTs sent after the kill were answered before that first acceptance (duplicates answered 200). */
  readonly statuses: Readonly<Record<number, number>>;
  /** Events acknowledged (2xx) before the kill: each claim had committed on the primary. */
  readonly ackedBeforeKill: number;
}

/**
 * The window a failover opened. Only POSTs sent after the kill count: one sent before may be accepted after it,
 * its claim committed on both servers. A claim accepted for a POST sent after the kill committed on the new
 * primary; a duplicate may be answered 200 without the database, from a receiver's cache of committed claims.
 */
export function failoverWindow(
  failed: { killedAt: number; promotedAt: number },
  answers: readonly Answer[],
): FailoverWindow {
  const after = answers
    .filter((a) => a.sentAt >= failed.killedAt)
    .sort((x, y) => x.answeredAt - y.answeredAt);
  const first = after.find((a) => a.accepted);
  const statuses: Record<number, number> = {};
  for (const a of after) {
    if (first && a.answeredAt >= first.answeredAt) break;
    statuses[a.status] = (statuses[a.status] ?? 0) + 1;
  }
  return {
    promotedMs: failed.promotedAt - failed.killedAt,
    firstAcceptSentMs: first ? first.sentAt - failed.killedAt : Number.NaN,
    firstAcceptAnsweredMs: first ? first.answeredAt - failed.killedAt : Number.NaN,
    statuses,
    ackedBeforeKill: ackedBefore(answers, failed.killedAt).length,
  };
}

function ackedBefore(answers: readonly Answer[], at: number): string[] {
  const ids = answers.filter((a) => a.status >= 200 && a.status < 300 && a.answeredAt <= at).map((a) => a.id);
  return [...new Set(ids)];
}

/**
 * The acknowledged events whose claim the promoted standby did not hold: no row at the end, or a row received
 * after one of the event's acknowledgements (claimed again from a provider's copy, which hides the loss from the
 * oracle's `lost`). A claim's row is received before its answer, which a round trip follows, hence the 1 ms margin
 * (one machine, one clock). A duplicate answered from a receiver's cache after the kill counts: its claim was
 * acknowledged.
 */
export async function missingAfterFailover(
  db: pg.Pool,
  schema: string,
  answers: readonly Answer[],
): Promise<string[]> {
  const firstAck = new Map<string, number>();
  for (const a of answers) {
    if (a.status < 200 || a.status >= 300) continue;
    firstAck.set(a.id, Math.min(a.answeredAt, firstAck.get(a.id) ?? Number.POSITIVE_INFINITY));
  }
  const { rows } = await db.query<{ id: string }>(
    `select acked.id from unnest($2::text[], $3::float8[]) as acked(id, at)
      where not exists (select 1 from "${schema}".events e
                         where e.source = $1 and e.dedupe_key = acked.id
                           and e.received_at <= to_timestamp((acked.at + 1) / 1000))`,
    [SOURCE, [...firstAck.keys()], [...firstAck.values()]],
  );
  return rows.map((r) => r.id).sort();
}
