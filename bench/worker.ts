// Worker throughput (issue 9, P3): N events over E entities, each handler a version-guarded upsert of the app's own
// table (and, with --advance, hookledger's guard too), drained by one worker process. Reports events/s and the CPU
// spent per event by this process and by its Postgres backends (read from /proc, so it needs the server on this
// host). The machine is shared: compare CPU per event rather than wall-clock figures.
//
//   node --import tsx bench/worker.ts [--events 20000] [--entities 2000] [--concurrency 4] [--advance] [--runs 1]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createPool } from "../src/db/pool.js";
import { migrate } from "../src/db/migrate.js";
import { ledgerContext } from "../src/ledger/context.js";
import { silentLogger } from "../src/log.js";
import { Handlers } from "../src/worker/handlers.js";
import { startWorker } from "../src/worker/worker.js";

const { values: args } = parseArgs({
  options: {
    events: { type: "string", default: "20000" },
    entities: { type: "string", default: "2000" },
    concurrency: { type: "string" },
    advance: { type: "boolean", default: false },
    runs: { type: "string", default: "1" },
    url: { type: "string", default: process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test" },
  },
});
const events = Number(args.events);
const entities = Number(args.entities);
const concurrency = args.concurrency === undefined ? undefined : Number(args.concurrency);

const ticks = 100; // USER_HZ on Linux
function cpuOf(pids: number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      total += (Number(fields[11]) + Number(fields[12])) / ticks;
    } catch {
      // The backend ended; its CPU is lost to this count (it only happens if a connection was replaced).
    }
  }
  return total;
}

// A 2 KB Stripe-like payload of event `id` about subscription `sub` (SQL expressions).
const payload = (id: string, sub: string) => `select jsonb_build_object('id', ${id},
  'type', 'customer.subscription.updated', 'data', jsonb_build_object('object', jsonb_build_object('id', ${sub},
  'status', 'active', 'metadata', jsonb_build_object('pad', repeat('x', 1800))))) as p`;

async function run(index: number): Promise<void> {
  const schema = `bench_worker_${process.pid}_${index}`;
  const admin = createPool({ connectionString: args.url, role: "admin", max: 2 });
  await admin.query(`drop schema if exists ${schema} cascade`);
  await migrate(admin, schema);
  const ledger = ledgerContext(schema);
  await admin.query(
    `create table ${schema}.app_state (id text primary key, version bigint not null, data jsonb)`,
  );
  // 2 KB Stripe-like payloads, due in claim order; entity i mod E, version rising with i.
  await admin.query(
    `with e as (
       insert into ${schema}.events (source, dedupe_key, event_type, body_sha256, entity_type, entity_id,
         entity_version, next_attempt_at, received_at)
       select 'stripe', 'evt_' || i, 'customer.subscription.updated', sha256(convert_to(p::text, 'utf8')),
         'subscription', 'sub_' || (i % $2::int), i, now() - interval '1 hour' + i * interval '1 microsecond',
         now() - interval '1 hour' + i * interval '1 microsecond'
       from generate_series(1, $1::int) i, lateral (${payload("'evt_' || i", "'sub_' || (i % $2::int)")}) x
       returning source, dedupe_key, received_at, entity_id
     )
     insert into ${schema}.event_bodies (source, dedupe_key, received_at, body, payload)
     select source, dedupe_key, received_at, convert_to(p::text, 'utf8'), p
     from e, lateral (${payload("dedupe_key", "entity_id")}) x`,
    [events, entities],
  );
  await admin.query(`analyze ${schema}.events`);

  const handlers = new Handlers().on("stripe", "*", async (ctx) => {
    if (args.advance && !(await ctx.advance())) return;
    const entity = ctx.event.entity;
    await ctx.tx.query(
      `insert into ${schema}.app_state as a (id, version, data) values ($1, $2, $3)
       on conflict (id) do update set version = excluded.version, data = excluded.data
       where a.version < excluded.version`,
      [entity?.id, entity?.version, { status: "active" }],
    );
  });
  const pool = createPool({ connectionString: args.url, role: "work", max: (concurrency ?? 4) + 1 });
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const worker = startWorker({
    pool,
    connectionString: args.url,
    ledger,
    handlers,
    log: silentLogger(),
    ...(concurrency !== undefined && { concurrency }),
    pollIntervalMs: 50,
  });
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from ${schema}.events where status in ('pending', 'failed')`,
    );
    if (rows[0]?.n === 0) break;
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  // This pool's backends (other processes on the server may use the same application_name): every connection the
  // pool holds, checked out at once now that the worker is idle; a backend opened only now used no CPU to speak of.
  const clients = await Promise.all(Array.from({ length: (concurrency ?? 4) + 1 }, () => pool.connect()));
  const backends = clients.map((c) => ({ pid: (c as unknown as { processID: number }).processID }));
  for (const c of clients) c.release();
  const backendCpu = cpuOf(backends.map((r) => r.pid));
  await worker.stop(10_000);
  await pool.end();
  const { rows } = await admin.query(
    `select status, outcome, count(*)::int as n from ${schema}.events group by 1, 2 order by 1, 2`,
  );
  // Updates of the ledger's rows per event, and how many stayed on their page (HOT: no index entries written).
  const { rows: tuples } = await admin.query<{ upd: number; hot: number }>(
    `select n_tup_upd::int as upd, n_tup_hot_upd::int as hot from pg_stat_user_tables
     where schemaname = $1 and relname = 'events'`,
    [schema],
  );
  await admin.query(`drop schema ${schema} cascade`);
  await admin.end();
  const nodeMs = ((cpu.user + cpu.system) / 1000 / events) * 1000;
  console.log(
    JSON.stringify({
      events,
      entities,
      concurrency: concurrency ?? "default",
      advance: args.advance,
      seconds: Number(seconds.toFixed(2)),
      eventsPerSecond: Math.round(events / seconds),
      nodeCpuUsPerEvent: Math.round(nodeMs),
      backendCpuUsPerEvent: Math.round(((backendCpu * 1e6) / events) * 1),
      eventUpdates: tuples[0] && {
        perEvent: Number((tuples[0].upd / events).toFixed(2)),
        hotPerEvent: Number((tuples[0].hot / events).toFixed(2)),
      },
      load: readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" "),
      ledger: rows,
    }),
  );
}

for (let i = 0; i < Number(args.runs); i++) await run(i);
