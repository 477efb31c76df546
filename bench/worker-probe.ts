// A probe, not the benchmark (issue 9): where the worker's database time goes. The worker of `npm run bench`
// (concurrency 10, batches of 50, the version-guarded upsert of bench/peers/app-table.ts) runs in this process over
// a backlog claimed beforehand (lib/worker-ledger.ts), once per variant of the ledger and round, variants rotated:
// `shipped` is what migrate() makes; `no-list-indexes` drops migration 012's indexes for the dashboard's lists
// (events_received, events_type, events_entity, events_troubled). Each run reports events/s, the CPU of the Postgres
// backends serving this process and of this process per event, and the events table's updates (and how many were
// HOT). (Before migration 014 it also measured 012's attempt-history trigger, which 014 dropped.)
// `node --import tsx bench/worker-probe.ts` — env DATABASE_URL (the cluster must run on this machine: its backends'
// CPU is read from /proc), PROBE_ROUNDS (3), PROBE_EVENTS (20000), PROBE_VARIANTS (both, comma separated),
// PROBE_CONCURRENCY (10: the worker's slots), PROBE_BATCH (the worker's default batch size).
import { randomBytes } from "node:crypto";
import pg from "pg";
import { CpuTracker, pgPort } from "./lib/cpu.js";
import { median } from "./lib/stats.js";
import { backlogDrained, claimBacklog, probeHookledger } from "./lib/worker-ledger.js";
import { appTableDdl } from "./peers/app-table.js";

const url = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const rounds = Number(process.env.PROBE_ROUNDS ?? 3);
const events = Number(process.env.PROBE_EVENTS ?? 20_000);
const concurrency = Number(process.env.PROBE_CONCURRENCY ?? 10);
const batchSize = process.env.PROBE_BATCH ? Number(process.env.PROBE_BATCH) : undefined;
const VARIANTS = {
  shipped: [],
  "no-list-indexes": ["drop index events_received, events_type, events_entity, events_troubled"],
} as const satisfies Record<string, readonly string[]>;
type Variant = keyof typeof VARIANTS;
const variants = (process.env.PROBE_VARIANTS?.split(",") ?? Object.keys(VARIANTS)) as Variant[];
for (const v of variants)
  if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}: ${Object.keys(VARIANTS)}`);

interface Run {
  readonly perSecond: number;
  readonly backendUs: number;
  readonly processUs: number;
  readonly updates: number;
  readonly hot: number;
}

async function runOnce(admin: pg.Client, variant: Variant): Promise<Run> {
  const schema = `probe_w_${randomBytes(4).toString("hex")}`;
  const hl = probeHookledger({
    connectionString: url,
    schema,
    concurrency,
    ...(batchSize !== undefined && { batchSize }),
  });
  let closed: Promise<void> | undefined;
  try {
    await hl.migrate();
    await admin.query(appTableDdl(schema));
    await claimBacklog({ connectionString: url, schema, events, entities: 2000, bodyBytes: 2048 });
    await admin.query(`set search_path = ${schema}`);
    for (const ddl of VARIANTS[variant]) await admin.query(ddl);
    await admin.query("reset search_path");
    await admin.query(`analyze ${schema}.events`);
    const cpu = new CpuTracker(admin, () => [process.pid], pgPort(url), 250);
    await cpu.start();
    const started = performance.now();
    hl.startWorker();
    await backlogDrained(admin, schema);
    const seconds = (performance.now() - started) / 1000;
    const split = await cpu.stop();
    // The worker's backends report their table statistics when they end (or once a second while busy): a short run
    // would otherwise read none of its updates.
    closed = hl.close();
    await closed;
    const { rows } = await admin.query<{ updates: string; hot: string }>(
      `select n_tup_upd as updates, n_tup_hot_upd as hot from pg_stat_user_tables
       where schemaname = $1 and relname = 'events'`,
      [schema],
    );
    return {
      perSecond: events / seconds,
      backendUs: (split.backends * 1e6) / events,
      processUs: (split.process * 1e6) / events,
      updates: Number(rows[0]?.updates ?? 0),
      hot: Number(rows[0]?.hot ?? 0),
    };
  } finally {
    await (closed ?? hl.close());
    await admin.query(`drop schema if exists ${schema} cascade`);
  }
}

const admin = new pg.Client({ connectionString: url, application_name: "hookledger-worker-probe" });
await admin.connect();
const results = new Map<Variant, Run[]>(variants.map((v) => [v, []]));
try {
  for (let round = 0; round < rounds; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length] as Variant);
    for (const variant of order) {
      const run = await runOnce(admin, variant);
      results.get(variant)?.push(run);
      console.log(
        `round ${round + 1} ${variant}: ${run.perSecond.toFixed(0)} events/s, backends ${run.backendUs.toFixed(0)} µs/event, ` +
          `process ${run.processUs.toFixed(0)} µs/event, ${run.updates} updates (${run.hot} HOT)`,
      );
    }
  }
} finally {
  await admin.end();
}
console.log(`\nmedians of ${rounds} rounds, ${events} events each:`);
for (const [variant, runs] of results) {
  const m = (f: (r: Run) => number) => median(runs.map(f)).toFixed(0);
  console.log(
    `${variant.padEnd(16)} ${m((r) => r.perSecond).padStart(6)} events/s  backends ${m((r) => r.backendUs).padStart(4)} µs/event` +
      `  process ${m((r) => r.processUs).padStart(4)} µs/event  updates/event ${(median(runs.map((r) => r.updates)) / events).toFixed(2)}`,
  );
}
