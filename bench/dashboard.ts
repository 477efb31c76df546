// `npm run bench:dashboard` (docs/benchmarks.md, "The dashboard on a million events"): issue 10 item 4. A ledger of
// BENCH_DASHBOARD_ROWS events filled with set-based SQL, the dashboard's list, detail, body and health answers timed
// over HTTP against 200 ms; then what migration 012's indexes cost unique ingest, interleaved with and without them.
// BENCH_ONLY=dashboard-latency or dashboard-index-cost runs one part.
import { mkdirSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createPool, migrate } from "hookledger";
import pg from "pg";
import { runLine } from "./report.js";
import { fmt, table } from "./report.js";
import { stopAllChildren } from "./lib/child.js";
import { pgPort } from "./lib/cpu.js";
import { benchEnv, redact, selected } from "./lib/env.js";
import { dropAllSchemas, freshSchema } from "./lib/schemas.js";
import { measureIndexCost, VARIANTS } from "./dashboard/index-cost.js";
import { BUDGET_MS, measureLatency } from "./dashboard/latency.js";
import { fillLedger, pickTargets } from "./dashboard/ledger.js";

const env = benchEnv(process.env);
const root = fileURLToPath(new URL("..", import.meta.url));
const logDir = join(root, "bench", "results", "logs");
const rows = Number(process.env.BENCH_DASHBOARD_ROWS ?? 1_000_000);
const requests = Number(process.env.BENCH_DASHBOARD_REQUESTS ?? 20);

async function cleanup(admin: pg.Client): Promise<void> {
  await stopAllChildren();
  await dropAllSchemas(admin).catch((error: Error) => console.error(`cleanup: ${error.message}`));
}

async function latencyPart(admin: pg.Client): Promise<void> {
  // BENCH_DASHBOARD_SCHEMA: time the requests on a ledger filled before (kept, not dropped), e.g. to try an index.
  const schema = process.env.BENCH_DASHBOARD_SCHEMA ?? (await fill(admin));
  const targets = await pickTargets(admin, schema);
  const lines = await measureLatency(env.url, schema, targets, { n: requests, warmup: 3 });
  console.log(`\ndashboard over HTTP, ${requests} requests each after 3 of warm-up, one at a time (ms):`);
  console.log(
    table(
      ["request", "p50", "p95", "max", `verdict (p95 ≤ ${BUDGET_MS})`],
      lines.map((l) => [
        l.name,
        fmt(l.p50, 1),
        fmt(l.p95, 1),
        fmt(l.max, 1),
        l.problem ? `INVALID: ${l.problem}` : l.p95 <= BUDGET_MS ? "PASS" : "FAIL",
      ]),
    ),
  );
}

async function fill(admin: pg.Client): Promise<string> {
  const schema = await freshSchema(admin, "dash", false);
  const pool = createPool({ connectionString: env.url, role: "admin", max: 1 });
  try {
    await migrate(pool, schema);
  } finally {
    await pool.end();
  }
  const began = performance.now();
  await fillLedger(admin, schema, rows, (n) =>
    process.stdout.write(`\r  filled ${n} events (${((performance.now() - began) / 1000).toFixed(0)} s)`),
  );
  const size = await admin.query<{ events: string; bodies: string }>(
    `select pg_size_pretty(pg_total_relation_size('${schema}.events')) as events,
       (select pg_size_pretty(sum(pg_total_relation_size(inhrelid))) from pg_inherits
        where inhparent = '${schema}.event_bodies'::regclass) as bodies`,
  );
  console.log(
    `\n  ledger ready in ${((performance.now() - began) / 1000).toFixed(0)} s: events ${size.rows[0]?.events}, event_bodies ${size.rows[0]?.bodies}`,
  );
  return schema;
}

async function indexCostPart(admin: pg.Client): Promise<void> {
  console.log(
    `\nindex cost: hookledger serve --no-worker, unique ingest, ${env.rounds} rounds × (${env.warmupSeconds} s warm-up + ${env.seconds} s), ${env.connections} connections`,
  );
  const lines = await measureIndexCost(
    { env, admin, pgPort: pgPort(env.url), logDir, root },
    VARIANTS,
    env.rounds,
    (variant, run) => console.log(`${variant} (round ${run.round})\n${runLine(run)}`),
  );
  const base = lines[0]?.perSecond ?? Number.NaN;
  console.log("\nunique ingest, medians over valid rounds:");
  console.log(
    table(
      ["indexes", "valid", "req/s", "÷ 012's", "cpu µs/req (server + pg)", "pg µs/req", "req/s per round"],
      lines.map((l) => [
        l.variant,
        `${l.runs.filter((r) => r.valid).length}/${l.runs.length}`,
        fmt(l.perSecond, 0),
        fmt(l.perSecond / base, 3),
        fmt(l.cpuUsPerOp, 0),
        fmt(l.backendsUsPerOp, 0),
        l.runs.map((r) => fmt(r.perSecond, 0)).join(" / "),
      ]),
    ),
  );
}

async function main(): Promise<void> {
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const admin = new pg.Client({ connectionString: env.url, application_name: "hookledger-bench-dashboard" });
  await admin.connect();
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void cleanup(admin).then(() => process.exit(130)));
  }
  try {
    const version = (await admin.query<{ v: string }>("select version() as v")).rows[0]?.v.split(" on ")[0];
    console.log(
      `hookledger bench, dashboard: ${rows} events; ${redact(env.url)}, ${version}, load average ${(loadavg()[0] ?? 0).toFixed(1)}`,
    );
    if (selected(env.only, "dashboard-latency")) await latencyPart(admin);
    if (selected(env.only, "dashboard-index-cost")) await indexCostPart(admin);
    console.log(`\nload average at the end ${(loadavg()[0] ?? 0).toFixed(1)}`);
  } finally {
    await cleanup(admin);
    await admin.end();
  }
}

await main();
