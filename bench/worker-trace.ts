// A probe, not the benchmark (issue 9): where a worker slot's time goes. The worker of `npm run bench` (batches of
// 50, the version-guarded upsert of bench/peers/app-table.ts, logging at info to /dev/null) runs in this process over
// a backlog claimed beforehand (lib/worker-ledger.ts). Every query of the `pg` clients is timed from the call to its
// answer, by what it is (the count, the lock, an arm, a handler's upsert, the settle, a commit), and a sampler on a
// connection of its own reads what the database's other backends are doing every 3 ms (running, or waiting, and on
// what). Run it at two concurrencies to tell a slot that waits on the others (locks) from one that waits its turn
// for the machine's cores.
// `node --import tsx bench/worker-trace.ts` — env DATABASE_URL, TRACE_CONCURRENCY (10), TRACE_EVENTS (20000).
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { createLogger } from "hookledger";
import pg from "pg";
import { backlogDrained, claimBacklog, probeHookledger } from "./lib/worker-ledger.js";
import { percentile } from "./lib/stats.js";
import { appTableDdl } from "./peers/app-table.js";

const url = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const events = Number(process.env.TRACE_EVENTS ?? 20_000);
const concurrency = Number(process.env.TRACE_CONCURRENCY ?? 10);

// What a statement is, from its text (the worker's own statements: src/ledger/pick.ts, pick-lock.ts, arm.ts, settle.ts).
function kind(text: string): string {
  if (text.startsWith("with due as")) return "count";
  if (text.startsWith("begin; set local enable_bitmapscan")) return "count's begin";
  if (text.startsWith("begin; set local idle")) return "batch's begin";
  if (text.startsWith("select e.source")) return "lock";
  if (text.includes("savepoint hookledger_event")) return "arm";
  if (text.startsWith("with done as")) return "settle";
  if (text.includes("app_subscriptions")) return "handler";
  if (text === "commit") return "commit";
  return "other";
}

const timed = new Map<string, number[]>();
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
// Wrapped on the prototype: the worker's pool makes its clients from this same `pg`.
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const answer = query.apply(this, args);
  if (answer instanceof Promise) {
    const first = args[0];
    const what = kind(typeof first === "string" ? first : ((first as { text?: string })?.text ?? ""));
    const began = performance.now();
    answer.then(
      () => {
        const list = timed.get(what) ?? [];
        list.push(performance.now() - began);
        timed.set(what, list);
      },
      () => {},
    );
  }
  return answer;
} as typeof pg.Client.prototype.query;

// Samples pg_stat_activity until `until` resolves: per sample, how many backends run each kind of statement, by
// what they wait on ("CPU": not waiting).
async function sample(until: Promise<unknown>): Promise<{ samples: number; counts: Map<string, number> }> {
  const probe = new pg.Client({ connectionString: url });
  await probe.connect();
  const counts = new Map<string, number>();
  let samples = 0;
  let done = false;
  void until.finally(() => {
    done = true;
  });
  try {
    while (!done) {
      const { rows } = await probe.query<{ wait: string; query: string }>(
        `select coalesce(wait_event_type || ':' || wait_event, 'CPU') as wait, query from pg_stat_activity
         where datname = current_database() and state = 'active' and pid <> pg_backend_pid()
           and application_name like 'hookledger-%'`,
      );
      samples++;
      for (const r of rows) {
        const key = `${kind(r.query)}, ${r.wait}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
  } finally {
    await probe.end();
  }
  return { samples, counts };
}

const schema = `probe_t_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: url, application_name: "worker-trace" });
await admin.connect();
const hl = probeHookledger({
  connectionString: url,
  schema,
  concurrency,
  log: createLogger({ format: "json", destination: createWriteStream("/dev/null") }),
});
try {
  await hl.migrate();
  await admin.query(appTableDdl(schema));
  await claimBacklog({ connectionString: url, schema, events, entities: 2000, bodyBytes: 2048 });
  await admin.query(`analyze ${schema}.events`);
  timed.clear();
  const cpu = process.cpuUsage();
  const started = performance.now();
  hl.startWorker();
  const drained = backlogDrained(admin, schema);
  const waits = await sample(drained);
  await drained;
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  console.log(
    `concurrency ${concurrency}: ${(events / seconds).toFixed(0)} events/s; this process used ` +
      `${(((used.user + used.system) / 1e6 / seconds) * 100).toFixed(0)} % of a core`,
  );
  console.log("statement        calls   mean ms   p50 ms   p90 ms   p99 ms");
  for (const [what, list] of [...timed].sort((a, b) => b[1].length - a[1].length)) {
    const mean = list.reduce((a, b) => a + b, 0) / list.length;
    const cells = [mean, ...[50, 90, 99].map((p) => percentile(list, p))].map((v) =>
      v.toFixed(2).padStart(8),
    );
    console.log(`${what.padEnd(15)} ${String(list.length).padStart(6)} ${cells.join(" ")}`);
  }
  console.log(`\nbackends at work, mean per sample of ${waits.samples} (statement, what it waits on):`);
  for (const [key, n] of [...waits.counts].sort((a, b) => b[1] - a[1]).slice(0, 12)) {
    console.log(`${(n / waits.samples).toFixed(3).padStart(7)}  ${key}`);
  }
} finally {
  await hl.close();
  await admin.query(`drop schema if exists ${schema} cascade`);
  await admin.end();
}
