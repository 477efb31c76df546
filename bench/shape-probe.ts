// A probe, not the benchmark (issue 9): the ledger's shape. `shipped` is the ledger migrate() makes (migration 010:
// a narrow `events` row per event, holding its key and state, and its body, payload and headers in `event_bodies`,
// partitioned by day); `split` is hand-written here: a narrow key table (the claim's conflict target, settled in
// place, and the tombstone once the body is gone), the bodies partitioned by day, and a queue of unsettled events.
// Per shape, in fresh schemas each round, shapes alternating first: (1) the batched claim (batches of 50 via
// unnest, 4 connections), (2) a worker cycle on that backlog (pick 50 due with FOR UPDATE SKIP LOCKED, settle,
// commit; 4 connections) with the HOT ratio of the settle and the sizes after (all of the shape's tables, their
// partitions included), (3) the pick's latency under claim+settle churn while another session holds a snapshot
// (xmin) open, (4) pruning one day of a two-day ledger of settled rows.
// CPU is the server backends' (/proc/<pid>/stat, so the server must run on this machine) and this process's.
// `node --import tsx bench/shape-probe.ts` — env DATABASE_URL, PROBE_ROUNDS (3), PROBE_ROWS (20000: claim and
// worker), PROBE_CHURN_SECONDS (60), PROBE_CHURN_RATE (500 events/s), PROBE_PRUNE_ROWS (200000, over 2 days),
// PROBE_PHASES (claim,worker,churn,prune), SPLIT_FILLFACTOR (50: room on event_keys pages for in-place settles),
// PROBE_PAD (x, or random: see probeBody), PROBE_EXPLAIN (1: print the plans of both picks).
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { migrate } from "../src/db/migrate.js";
import { createPool, type PoolClient, quoteIdent } from "../src/db/pool.js";
import { dropBodyPartitions } from "../src/ledger/body-partitions.js";
import { batchRow, insertClaimBatch } from "../src/ledger/claim-batch-insert.js";
import { ledgerContext, type LedgerContext } from "../src/ledger/context.js";
import { pruneBatch } from "../src/ledger/prune.js";
import { settleAttempts } from "../src/ledger/settle.js";
import { stripeProvider } from "../src/providers/stripe.js";
import { backendSeconds, connectAll } from "./lib/backends.js";
import { median, percentile } from "./lib/stats.js";
import { stripeBody, stripeSignature } from "./lib/stripe.js";

const url = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const rounds = Number(process.env.PROBE_ROUNDS ?? 3);
const rowsPerPhase = Number(process.env.PROBE_ROWS ?? 20_000);
const churnSeconds = Number(process.env.PROBE_CHURN_SECONDS ?? 60);
const churnRate = Number(process.env.PROBE_CHURN_RATE ?? 500);
const pruneRows = Number(process.env.PROBE_PRUNE_ROWS ?? 200_000);
const phases = new Set((process.env.PROBE_PHASES ?? "claim,worker,churn,prune").split(","));
const fillfactor = Number(process.env.SPLIT_FILLFACTOR ?? 50);
// "random": the body's padding is random base64url instead of bench/lib/stripe.ts's "x…" (which pglz compresses
// to almost nothing, so the body row stays small and inline).
const randomPad = process.env.PROBE_PAD === "random";
const BATCH = 50;
const CONNECTIONS = 4;
const SOURCE = "stripe";

type Shape = "shipped" | "split";
const SHAPES: readonly Shape[] = ["shipped", "split"];

// One claimed delivery as the batched claim sends it: its insert values (claim.ts insertValues order: source,
// dedupe_key, event_type, body, body_sha256, dedupe_on_body, payload, headers, secret_index, entity_type,
// entity_id, entity_version, occurred_at, arrived_via), built once and sent to both shapes.
type Row = ReturnType<typeof batchRow>;

// Signed 2 KB Stripe events, verified by the provider as the edge does, then made storable as the claim does.
function probeBody(fields: Parameters<typeof stripeBody>[0]): string {
  const body = stripeBody(fields, 2048);
  if (!randomPad) return body;
  return body.replace(/"pad":"(x*)"/, (_, pad: string) => {
    const random = randomBytes(pad.length).toString("base64url").slice(0, pad.length);
    return `"pad":"${random}"`;
  });
}

function buildRows(prefix: string, count: number): Row[] {
  const provider = stripeProvider();
  const secret = "whsec_probe";
  return Array.from({ length: count }, (_, i) => {
    const id = `${prefix}_${i}`;
    const body = Buffer.from(
      probeBody({ id, subscription: `sub_${i}`, created: 1_767_225_600, status: "active" }),
    );
    const now = Date.now();
    const headers = new Headers({
      "stripe-signature": stripeSignature(body, secret, Math.floor(now / 1000)),
    });
    const verified = provider.verify({ body, headers, secrets: [secret], now });
    if (!verified.ok || !("event" in verified)) throw new Error(`probe event ${id} does not verify`);
    return batchRow({
      source: SOURCE,
      event: verified.event,
      body,
      headers: {},
      secretIndex: verified.secretIndex,
      arrivedVia: "delivery",
    });
  });
}

// Columns of a batch in (source, dedupe key) order, as insertClaimBatch sends them.
function columnsOf(rows: readonly Row[]): unknown[][] {
  const sorted = [...rows].sort((a, b) => {
    const k = a.input.event.dedupeKey;
    const l = b.input.event.dedupeKey;
    return k < l ? -1 : k > l ? 1 : 0;
  });
  const columns: unknown[][] = Array.from({ length: 14 }, () => new Array(sorted.length));
  sorted.forEach((row, i) => {
    row.values.forEach((value, c) => {
      (columns[c] as unknown[])[i] = value;
    });
  });
  return columns;
}

// The split shape. event_keys has no index on status (nor on anything a settle changes), so a settle is a HOT
// update when its page has room (fillfactor); BRIN on received_at serves tombstone expiry and the prune's check.
function splitDdl(s: string, days: readonly Date[]): string {
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const partitions = days
    .map((d) => {
      const next = new Date(d.getTime() + 86_400_000);
      return `create table ${s}.event_bodies_${day(d).replaceAll("-", "")} partition of ${s}.event_bodies
  for values from ('${day(d)}') to ('${day(next)}');`;
    })
    .join("\n");
  return `create schema ${s};
create table ${s}.event_keys (
  source          text        not null,
  dedupe_key      text        not null,
  seq             bigint      generated always as identity,
  body_sha256     bytea       not null,
  dedupe_on_body  boolean     not null default false,
  status          text        not null default 'pending',
  outcome         text,
  attempts        integer     not null default 0,
  last_error      text,
  received_at     timestamptz not null default now(),
  settled_at      timestamptz,
  arrived_via     text        not null default 'delivery',
  primary key (source, dedupe_key),
  constraint event_keys_status check (status in ('pending', 'failed', 'settled', 'dead', 'inline')),
  constraint event_keys_outcome check (outcome in ('applied', 'stale', 'unhandled', 'ignored')),
  constraint event_keys_settled_has_outcome check ((status = 'settled') = (outcome is not null))
) with (fillfactor = ${fillfactor});
create unique index event_keys_body_dedupe on ${s}.event_keys (source, body_sha256) where dedupe_on_body;
create index event_keys_received on ${s}.event_keys using brin (received_at);
create table ${s}.event_bodies (
  source          text        not null,
  dedupe_key      text        not null,
  received_at     timestamptz not null,
  event_type      text        not null,
  body            bytea       not null,
  payload         jsonb       not null,
  headers         jsonb       not null default '{}',
  secret_index    smallint,
  entity_type     text,
  entity_id       text,
  entity_version  numeric,
  occurred_at     timestamptz,
  primary key (source, dedupe_key, received_at)
) partition by range (received_at);
${partitions}
create table ${s}.event_queue (
  source             text        not null,
  dedupe_key         text        not null,
  received_at        timestamptz not null,
  attempts           integer     not null default 0,
  last_error         text,
  next_attempt_at    timestamptz not null default now(),
  attempt_started_at timestamptz,
  entity_type        text,
  entity_id          text,
  primary key (source, dedupe_key)
);
create index event_queue_due on ${s}.event_queue (next_attempt_at);`;
}

// The split claim: one statement, the key first (the conflict target), then body and queue row of each key it
// inserted. No tombstone check: a pruned event's key row stays, so its conflict is the tombstone. A row whose
// payload is its body has none in its values (batchRow) and reads it from the body, as the shipped claim does.
const splitClaimSql = (s: string) => `with r as (
  select * from unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $6::boolean[], $7::jsonb[],
    $8::jsonb[], $9::smallint[], $10::text[], $11::text[], $12::numeric[], $13::timestamptz[], $14::text[])
    with ordinality as r(source, dedupe_key, event_type, body, body_sha256, dedupe_on_body, payload, headers,
      secret_index, entity_type, entity_id, entity_version, occurred_at, arrived_via, ord)
), k as (
  insert into ${s}.event_keys (source, dedupe_key, body_sha256, dedupe_on_body, arrived_via)
  select source, dedupe_key, body_sha256, dedupe_on_body, arrived_via from r order by ord
  on conflict do nothing
  returning source, dedupe_key, received_at
), b as (
  insert into ${s}.event_bodies (source, dedupe_key, received_at, event_type, body, payload, headers, secret_index,
    entity_type, entity_id, entity_version, occurred_at)
  select r.source, r.dedupe_key, k.received_at, r.event_type, r.body,
    coalesce(r.payload, convert_from(r.body, 'UTF8')::jsonb), r.headers, r.secret_index,
    r.entity_type, r.entity_id, r.entity_version, r.occurred_at
  from k join r on r.source = k.source and r.dedupe_key = k.dedupe_key
), q as (
  insert into ${s}.event_queue (source, dedupe_key, received_at, entity_type, entity_id)
  select r.source, r.dedupe_key, k.received_at, r.entity_type, r.entity_id
  from k join r on r.source = k.source and r.dedupe_key = k.dedupe_key
)
select source, dedupe_key from k`;

// The pick: shipped walks events_due with the worker's predicate (pick.ts) and reads the payload from the event's
// body row by its whole key (pick-lock.ts); split walks the queue and reads the payload from the body. Both probe
// the body laterally per event, so the partition is pruned at run time and the body is read by its key, however
// the planner sizes the tables; only the key row (shipped) or the queue row (split) is locked. Both return what
// the handler needs and the batch's transaction id (the settle's fence).
const pickSql: Record<Shape, (s: string) => string> = {
  shipped: (s) => `select e.source, e.dedupe_key, e.event_type, b.payload, e.attempts,
  pg_current_xact_id()::text as xid
from ${s}.events e
cross join lateral (select payload from ${s}.event_bodies
  where source = e.source and dedupe_key = e.dedupe_key and received_at = e.received_at) b
where e.status in ('pending', 'failed') and e.next_attempt_at <= now()
order by e.next_attempt_at
limit $1::int
for update of e skip locked`,
  split: (s) => `with q as (
  select source, dedupe_key, received_at, attempts from ${s}.event_queue
  where next_attempt_at <= now()
  order by next_attempt_at
  limit $1::int
  for update skip locked
)
select q.source, q.dedupe_key, b.event_type, b.payload, q.attempts, pg_current_xact_id()::text as xid
from q
cross join lateral (select event_type, payload from ${s}.event_bodies
  where source = q.source and dedupe_key = q.dedupe_key and received_at = q.received_at limit 1) b`,
};

// The split settle: the queue row goes, the key row is settled in place (carrying the attempts over).
const splitSettleSql = (s: string) => `with u as (
  select * from unnest($1::text[], $2::text[], $3::text[]) as u(source, dedupe_key, outcome)
), gone as (
  delete from ${s}.event_queue q using u where q.source = u.source and q.dedupe_key = u.dedupe_key
  returning q.source, q.dedupe_key, q.attempts
), done as (
  update ${s}.event_keys k set status = 'settled', outcome = u.outcome, settled_at = now(), attempts = gone.attempts
  from gone join u on u.source = gone.source and u.dedupe_key = gone.dedupe_key
  where k.source = gone.source and k.dedupe_key = gone.dedupe_key
  returning 1
)
select count(*)::int as n from done`;

interface Ledger {
  readonly shape: Shape;
  readonly schema: string;
  readonly s: string;
  readonly ledger: LedgerContext;
  /** The tables (with their partitions) whose update and dead-tuple figures count. */
  readonly tables: readonly string[];
}

const admin = createPool({ connectionString: url, role: "admin", max: 3 });
const made = new Set<string>();
const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
const dayMs = 86_400_000;
// Prune's two days end the day before yesterday; the split shape has a partition for each of 4 days before today,
// today and tomorrow.
const pruneDay0 = new Date(today.getTime() - 3 * dayMs);
const partitionDays = [-4, -3, -2, -1, 0, 1].map((d) => new Date(today.getTime() + d * dayMs));

async function makeLedger(shape: Shape): Promise<Ledger> {
  const schema = `shape_${shape}_${randomBytes(4).toString("hex")}`;
  made.add(schema);
  const s = quoteIdent(schema);
  if (shape === "shipped") await migrate(admin, schema);
  else await admin.query(splitDdl(s, partitionDays));
  return {
    shape,
    schema,
    s,
    ledger: ledgerContext(schema),
    tables: shape === "shipped" ? ["events", "event_bodies"] : ["event_keys", "event_queue"],
  };
}

// The shape's tables: what ANALYZE and VACUUM cover (autovacuum may be off, as on the probe's machine; a
// partitioned table's covers its partitions) and what the sizes sum.
function tableNames(l: Ledger): string[] {
  return l.shape === "shipped" ? ["events", "event_bodies"] : ["event_keys", "event_bodies", "event_queue"];
}

function mainTables(l: Ledger): string {
  return tableNames(l)
    .map((n) => `${l.s}.${n}`)
    .join(", ");
}

// Each named table of the schema ($1, $2) and its partitions: pg_partition_tree lists nothing for a plain table.
const treeSql = `select t.oid from unnest($2::text[]) as n (name)
  cross join lateral (select format('%I.%I', $1::text, n.name)::regclass::oid as oid) r
  cross join lateral (select r.oid union select p.relid::oid from pg_partition_tree(r.oid::regclass) p) t`;

async function dropLedger(l: Ledger): Promise<void> {
  await admin.query(`drop schema if exists ${l.s} cascade`);
  made.delete(l.schema);
}

// Backend CPU µs, this process's CPU µs and wall seconds of `work`, run on `n` fresh connections of `role`.
async function measured<T>(
  role: "ingest" | "work",
  n: number,
  work: (clients: PoolClient[]) => Promise<T>,
): Promise<{ result: T; pgUs: number; nodeUs: number; seconds: number }> {
  const pool = createPool({ connectionString: url, role, max: n, statementTimeoutMs: 60_000 });
  const { clients, pids } = await connectAll(pool, n);
  try {
    const cpu = process.cpuUsage();
    const pg0 = backendSeconds(pids);
    const t0 = performance.now();
    const result = await work(clients);
    const seconds = (performance.now() - t0) / 1000;
    const pgUs = (backendSeconds(pids) - pg0) * 1e6;
    const used = process.cpuUsage(cpu);
    return { result, pgUs, nodeUs: used.user + used.system, seconds };
  } finally {
    for (const c of clients) c.release();
    await pool.end();
  }
}

async function claimBatch(client: PoolClient, l: Ledger, rows: readonly Row[]): Promise<number> {
  if (l.shape === "shipped") return (await insertClaimBatch(client, l.ledger, rows, undefined)).size;
  const r = await client.query({
    name: `probe.${l.schema}.claim`,
    text: splitClaimSql(l.s),
    values: columnsOf(rows),
  });
  return r.rowCount ?? 0;
}

// One worker cycle in one transaction: pick up to `limit` due events, settle them all as applied, commit.
async function workerCycle(client: PoolClient, l: Ledger, limit: number): Promise<number> {
  await client.query("begin");
  try {
    const picked = await client.query<{ source: string; dedupe_key: string; xid: string }>({
      name: `probe.${l.schema}.pick`,
      text: pickSql[l.shape](l.s),
      values: [limit],
    });
    const n = picked.rows.length;
    const xid = picked.rows[0]?.xid;
    if (n > 0 && xid !== undefined) {
      const sources = picked.rows.map((r) => r.source);
      const keys = picked.rows.map((r) => r.dedupe_key);
      if (l.shape === "shipped") {
        const ok = await settleAttempts(
          client,
          l.ledger,
          picked.rows.map((r) => ({
            source: r.source,
            dedupe_key: r.dedupe_key,
            outcome: "applied" as const,
          })),
          xid,
          "0", // this probe picks without the count, so its batches have no row of marks
        );
        if (!ok) throw new Error("shipped settle did not settle the batch");
      } else {
        const r = await client.query<{ n: number }>({
          name: `probe.${l.schema}.settle`,
          text: splitSettleSql(l.s),
          values: [sources, keys, keys.map(() => "applied")],
        });
        if (r.rows[0]?.n !== n) throw new Error("split settle did not settle the batch");
      }
    }
    await client.query("commit");
    return n;
  } catch (error) {
    await client.query("rollback");
    throw error;
  }
}

interface Stats {
  upd: number;
  hot: number;
  dead: number;
}

async function tableStats(l: Ledger): Promise<Stats> {
  const r = await admin.query<{ upd: string; hot: string; dead: string }>(
    `select coalesce(sum(n_tup_upd), 0) as upd, coalesce(sum(n_tup_hot_upd), 0) as hot,
       coalesce(sum(n_dead_tup), 0) as dead
     from pg_stat_user_tables where relid in (${treeSql})`,
    [l.schema, l.tables],
  );
  const row = r.rows[0];
  return { upd: Number(row?.upd ?? 0), hot: Number(row?.hot ?? 0), dead: Number(row?.dead ?? 0) };
}

async function sizes(l: Ledger): Promise<{ heapMB: number; indexMB: number }> {
  const r = await admin.query<{ heap: string; idx: string }>(
    `select coalesce(sum(pg_table_size(c.oid)), 0) as heap, coalesce(sum(pg_indexes_size(c.oid)), 0) as idx
     from pg_class c where c.oid in (${treeSql}) and c.relkind = 'r'`,
    [l.schema, tableNames(l)],
  );
  const row = r.rows[0];
  return { heapMB: Number(row?.heap ?? 0) / 2 ** 20, indexMB: Number(row?.idx ?? 0) / 2 ** 20 };
}

async function walLsn(): Promise<string> {
  const r = await admin.query<{ lsn: string }>("select pg_current_wal_insert_lsn()::text as lsn");
  return r.rows[0]?.lsn ?? "0/0";
}

async function walSince(lsn: string): Promise<number> {
  const r = await admin.query<{ d: string }>(
    "select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn) as d",
    [lsn],
  );
  return Number(r.rows[0]?.d ?? 0);
}

// Statistics reach pg_stat_user_tables when a backend ends or at most a second after its transaction.
const statsSettle = () => sleep(1200);

// Phase 1: the claim of `rows` in batches of 50 on 4 connections.
async function claimPhase(l: Ledger, rows: readonly Row[]) {
  const batches: Row[][] = [];
  for (let i = 0; i < rows.length; i += BATCH) batches.push(rows.slice(i, i + BATCH));
  let next = 0;
  const m = await measured("ingest", CONNECTIONS, (clients) =>
    Promise.all(
      clients.map(async (client) => {
        let inserted = 0;
        while (next < batches.length) inserted += await claimBatch(client, l, batches[next++] as Row[]);
        return inserted;
      }),
    ),
  );
  const inserted = m.result.reduce((a, b) => a + b, 0);
  if (inserted !== rows.length) throw new Error(`${l.shape}: claimed ${inserted} of ${rows.length}`);
  return {
    pgUs: m.pgUs / rows.length,
    nodeUs: m.nodeUs / rows.length,
    perSec: rows.length / m.seconds,
  };
}

// Phase 2: 4 workers settle the backlog, 50 events a cycle.
async function workerPhase(l: Ledger, expected: number) {
  await admin.query(`analyze ${mainTables(l)}`);
  if (process.env.PROBE_EXPLAIN === "1") {
    const plan = await admin.query<{ "QUERY PLAN": string }>(
      `explain ${pickSql[l.shape](l.s).replace("$1::int", String(BATCH))}`,
    );
    console.log(plan.rows.map((r) => r["QUERY PLAN"]).join("\n"));
  }
  await statsSettle();
  const before = await tableStats(l);
  const m = await measured("work", CONNECTIONS, (clients) =>
    Promise.all(
      clients.map(async (client) => {
        let settled = 0;
        for (;;) {
          const n = await workerCycle(client, l, BATCH);
          if (n === 0) return settled;
          settled += n;
        }
      }),
    ),
  );
  const settled = m.result.reduce((a, b) => a + b, 0);
  if (settled !== expected) throw new Error(`${l.shape}: settled ${settled} of ${expected}`);
  await statsSettle();
  const after = await tableStats(l);
  const upd = after.upd - before.upd;
  const size = await sizes(l);
  return {
    pgUs: m.pgUs / settled,
    nodeUs: m.nodeUs / settled,
    perSec: settled / m.seconds,
    hot: upd > 0 ? (after.hot - before.hot) / upd : 0,
    updates: upd,
    ...size,
  };
}

// Phase 3: claims at a fixed rate and one worker settling them, for `churnSeconds`, while another session holds a
// snapshot; every 100 ms a fourth session times the pick (in a transaction it rolls back).
async function churnPhase(l: Ledger, rows: readonly Row[]) {
  await admin.query(`vacuum analyze ${mainTables(l)}`);
  const pool = createPool({ connectionString: url, role: "work", max: 4, statementTimeoutMs: 60_000 });
  const { clients } = await connectAll(pool, 4);
  const [holder, claimer, worker, sampler] = clients as [PoolClient, PoolClient, PoolClient, PoolClient];
  const latencies: number[] = [];
  let claimed = 0;
  let settled = 0;
  try {
    await holder.query("begin isolation level repeatable read");
    await holder.query("select txid_current()");
    const t0 = performance.now();
    const end = t0 + churnSeconds * 1000;
    let stop = false;
    const claiming = (async () => {
      let next = 0;
      const interval = (BATCH / churnRate) * 1000;
      for (let i = 0; performance.now() < end && next < rows.length; i++) {
        const wait = t0 + i * interval - performance.now();
        if (wait > 0) await sleep(wait);
        claimed += await claimBatch(claimer, l, rows.slice(next, next + BATCH));
        next += BATCH;
      }
      stop = true;
    })();
    const working = (async () => {
      while (!stop) {
        const n = await workerCycle(worker, l, BATCH);
        settled += n;
        if (n === 0) await sleep(20);
      }
      for (;;) {
        const n = await workerCycle(worker, l, BATCH);
        if (n === 0) break;
        settled += n;
      }
    })();
    const sampling = (async () => {
      const text = pickSql[l.shape](l.s);
      const name = `probe.${l.schema}.pick`;
      for (let i = 1; !stop; i++) {
        await sampler.query("begin");
        const t = performance.now();
        await sampler.query({ name, text, values: [BATCH] });
        latencies.push(performance.now() - t);
        await sampler.query("rollback");
        const wait = t0 + i * 100 - performance.now();
        if (wait > 0) await sleep(wait);
      }
    })();
    await Promise.all([claiming, working, sampling]);
    await holder.query("commit");
  } finally {
    for (const c of clients) c.release();
    await pool.end();
  }
  await statsSettle();
  const stats = await tableStats(l);
  const tail = latencies.slice(Math.floor(latencies.length * 0.9));
  return {
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    lastP50: percentile(tail, 50),
    samples: latencies.length,
    claimed,
    settled,
    dead: stats.dead,
  };
}

// Phase 4: `pruneRows` settled events received evenly over two days (pruneDay0 and the day after), then the first
// day pruned: shipped by the product's prune (tombstones, then deletes of the key rows, 1,000 a batch, then the drop
// of the day's body partition, as runPrune does) and the VACUUM it leaves to do; split by dropping the day's body
// partition after checking that none of its keys is unsettled.
async function prunePhase(l: Ledger) {
  // One body for all rows (ids replaced): with PROBE_PAD=random its padding is as incompressible as each claim's.
  const template = probeBody({ id: "@ID@", subscription: "@SUB@", created: 1_767_225_600, status: "active" });
  const fill = `select 'stripe' as source, 'evt_p_' || i as dedupe_key, 'customer.subscription.updated' as event_type,
    b, sha256(b) as body_sha256, convert_from(b, 'UTF8')::jsonb as payload, 'stripe.subscription' as entity_type,
    'sub_p_' || i as entity_id, 1767225600::numeric as entity_version, t as received_at,
    t + interval '1 second' as settled_at
  from (select i, convert_to(replace(replace($1::text, '@ID@', 'evt_p_' || i), '@SUB@', 'sub_p_' || i), 'UTF8') as b,
      $2::timestamptz + i * (interval '2 days' / $3::int) as t
    from generate_series(0, $3::int - 1) as i) g`;
  const values = [template, pruneDay0, pruneRows];
  if (l.shape === "shipped") {
    // migrate() makes partitions from today on; without the fill days' own, their bodies would land in the default
    // partition and the prune could not drop the day.
    await admin.query(`select ${l.s}.make_body_partitions($1::timestamptz, 3::int)`, [pruneDay0]);
    await admin.query(
      `with f as (${fill}), k as (
         insert into ${l.s}.events (source, dedupe_key, event_type, body_sha256, entity_type, entity_id,
           entity_version, received_at, settled_at, status, outcome, attempts, next_attempt_at)
         select source, dedupe_key, event_type, body_sha256, entity_type, entity_id, entity_version, received_at,
           settled_at, 'settled', 'applied', 1, received_at from f
       )
       insert into ${l.s}.event_bodies (source, dedupe_key, received_at, body, payload)
       select source, dedupe_key, received_at, b, payload from f`,
      values,
    );
  } else {
    await admin.query(
      `with f as (${fill}), k as (
         insert into ${l.s}.event_keys (source, dedupe_key, body_sha256, received_at, settled_at, status, outcome,
           attempts)
         select source, dedupe_key, body_sha256, received_at, settled_at, 'settled', 'applied', 1 from f
       )
       insert into ${l.s}.event_bodies (source, dedupe_key, received_at, event_type, body, payload, entity_type,
         entity_id, entity_version)
       select source, dedupe_key, received_at, event_type, b, payload, entity_type, entity_id, entity_version from f`,
      values,
    );
  }
  await admin.query(`vacuum analyze ${l.shape === "shipped" ? mainTables(l) : `${l.s}.event_keys`}`);
  await admin.query("checkpoint");
  const before = new Date(pruneDay0.getTime() + dayMs);
  const lsn = await walLsn();
  const t0 = performance.now();
  let pruned = 0;
  if (l.shape === "shipped") {
    for (;;) {
      const batch = await pruneBatch(admin, l.ledger, { source: SOURCE, before, limit: 1000 });
      if (batch.marked === 0) break;
      pruned += batch.pruned;
    }
    const drop = await dropBodyPartitions(admin, l.ledger, before);
    const day = `event_bodies_${pruneDay0.toISOString().slice(0, 10).replaceAll("-", "")}`;
    // The day's last rows may settle past the horizon (received within a second of it): their bodies are kept.
    if (!drop.dropped.includes(day) || drop.kept > 2) {
      throw new Error(`shipped: dropped ${drop.dropped.join(", ") || "nothing"}, kept ${drop.kept} bodies`);
    }
  } else {
    const day = pruneDay0.toISOString().slice(0, 10);
    const client = await admin.connect();
    try {
      await client.query("begin");
      const open = await client.query<{ n: number }>(
        `select (select count(*)::int from ${l.s}.event_keys
                 where received_at >= $1::timestamptz and received_at < $2::timestamptz and status <> 'settled')
              + (select count(*)::int from ${l.s}.event_queue where received_at < $2::timestamptz) as n`,
        [pruneDay0, before],
      );
      if (open.rows[0]?.n !== 0) throw new Error("split: the day to drop still has unsettled events");
      const counted = await client.query<{ n: number }>(
        `select count(*)::int as n from ${l.s}.event_bodies_${day.replaceAll("-", "")}`,
      );
      pruned = counted.rows[0]?.n ?? 0;
      await client.query(`drop table ${l.s}.event_bodies_${day.replaceAll("-", "")}`);
      await client.query("commit");
    } catch (error) {
      await client.query("rollback");
      throw error;
    } finally {
      client.release();
    }
  }
  const ms = performance.now() - t0;
  const walMB = (await walSince(lsn)) / 2 ** 20;
  let vacuumMs = 0;
  let vacuumWalMB = 0;
  if (l.shape === "shipped") {
    const vlsn = await walLsn();
    const v0 = performance.now();
    await admin.query(`vacuum ${mainTables(l)}`);
    vacuumMs = performance.now() - v0;
    vacuumWalMB = (await walSince(vlsn)) / 2 ** 20;
  }
  const expected = pruneRows / 2;
  if (Math.abs(pruned - expected) > 2) throw new Error(`${l.shape}: pruned ${pruned}, expected ${expected}`);
  return { ms, walMB, vacuumMs, vacuumWalMB, pruned };
}

// Figures by name, shape and round, printed as one table at the end.
const figures = new Map<string, Map<Shape, number[]>>();
function record(name: string, shape: Shape, value: number): void {
  let byShape = figures.get(name);
  if (!byShape) {
    byShape = new Map();
    figures.set(name, byShape);
  }
  const list = byShape.get(shape) ?? [];
  list.push(value);
  byShape.set(shape, list);
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "-";
  const abs = Math.abs(n);
  return abs >= 100 ? n.toFixed(0) : abs >= 10 ? n.toFixed(1) : abs >= 1 ? n.toFixed(2) : n.toFixed(3);
}

function printTable(): void {
  console.log("\nfigure                              shape     median  rounds");
  for (const [name, byShape] of figures) {
    for (const shape of SHAPES) {
      const values = byShape.get(shape);
      if (!values) continue;
      console.log(
        `${name.padEnd(35)} ${shape.padEnd(7)} ${fmt(median(values)).padStart(8)}  ${values.map(fmt).join(" / ")}`,
      );
    }
  }
}

let interrupted = false;
process.on("SIGINT", () => {
  interrupted = true;
});

try {
  const version = (await admin.query<{ v: string }>("select version() as v")).rows[0]?.v ?? "";
  console.log(`shape probe: ${version.split(" on ")[0]}; ${rounds} rounds, phases ${[...phases].join(",")}`);
  console.log(
    `claim/worker ${rowsPerPhase} rows, batches of ${BATCH}, ${CONNECTIONS} connections; churn ${churnSeconds} s at ${churnRate}/s; prune ${pruneRows} rows over 2 days; split fillfactor ${fillfactor}; body padding ${randomPad ? "random" : "x"}`,
  );
  const claimRows = buildRows("evt_c", rowsPerPhase);
  const churnRows = phases.has("churn")
    ? buildRows("evt_h", Math.ceil(churnSeconds * churnRate) + BATCH)
    : [];
  for (let round = 0; round < rounds && !interrupted; round++) {
    const order = round % 2 === 0 ? SHAPES : [...SHAPES].reverse();
    for (const shape of order) {
      if (interrupted) break;
      const l = await makeLedger(shape);
      try {
        if (phases.has("claim") || phases.has("worker")) {
          const c = await claimPhase(l, claimRows);
          record("claim: pg µs/row", shape, c.pgUs);
          record("claim: node µs/row", shape, c.nodeUs);
          record("claim: rows/s", shape, c.perSec);
          console.log(`round ${round + 1} ${shape} claim: ${fmt(c.pgUs)} pg µs/row, ${fmt(c.perSec)} rows/s`);
          if (phases.has("worker")) {
            const w = await workerPhase(l, rowsPerPhase);
            record("worker: pg µs/event", shape, w.pgUs);
            record("worker: node µs/event", shape, w.nodeUs);
            record("worker: events/s", shape, w.perSec);
            record("worker: HOT ratio of updates", shape, w.hot);
            record("after worker: heap+toast MB", shape, w.heapMB);
            record("after worker: index MB", shape, w.indexMB);
            console.log(
              `round ${round + 1} ${shape} worker: ${fmt(w.pgUs)} pg µs/event, ${fmt(w.perSec)} events/s, HOT ${fmt(w.hot)} of ${w.updates} updates, heap ${fmt(w.heapMB)} MB, indexes ${fmt(w.indexMB)} MB`,
            );
          }
        }
        if (phases.has("churn") && !interrupted) {
          const h = await churnPhase(l, churnRows);
          record("churn+xmin: pick p50 ms", shape, h.p50);
          record("churn+xmin: pick p99 ms", shape, h.p99);
          record("churn+xmin: pick p50 ms, last 10%", shape, h.lastP50);
          record("churn+xmin: n_dead_tup at end", shape, h.dead);
          console.log(
            `round ${round + 1} ${shape} churn: pick p50 ${fmt(h.p50)} ms, p99 ${fmt(h.p99)} ms, last-10% p50 ${fmt(h.lastP50)} ms (${h.samples} samples), ${h.claimed} claimed, ${h.settled} settled, ${h.dead} dead tuples`,
          );
        }
      } finally {
        await dropLedger(l);
      }
      if (phases.has("prune") && !interrupted) {
        const p = await makeLedger(shape);
        try {
          const r = await prunePhase(p);
          record("prune one day: ms", shape, r.ms);
          record("prune one day: WAL MB", shape, r.walMB);
          if (shape === "shipped") {
            record("prune: vacuum after, ms", shape, r.vacuumMs);
            record("prune: vacuum after, WAL MB", shape, r.vacuumWalMB);
          }
          console.log(
            `round ${round + 1} ${shape} prune: ${r.pruned} rows in ${fmt(r.ms)} ms, WAL ${fmt(r.walMB)} MB${shape === "shipped" ? `; vacuum ${fmt(r.vacuumMs)} ms, WAL ${fmt(r.vacuumWalMB)} MB` : ""}`,
          );
        } finally {
          await dropLedger(p);
        }
      }
    }
  }
  printTable();
} finally {
  for (const schema of [...made]) {
    try {
      await admin.query(`drop schema if exists ${quoteIdent(schema)} cascade`);
    } catch (error) {
      console.error(`cleanup: dropping ${schema} failed: ${(error as Error).message}`);
    }
  }
  await admin.end();
}
