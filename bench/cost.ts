// The cost table of docs/benchmarks.md ("What each feature costs"): `hookledger serve`'s ingest path with one feature
// taken out at a time (bench/peers/cost.ts), beside the floor and `serve` itself, interleaved over rounds with the
// load generator and the knobs of `npm run bench`. For each feature, unique ingest's and the duplicate storm's
// server and Postgres CPU per delivery with it minus without it (the medians of the rounds).
// Then the worker at c10 with and without its logs (BENCH_COST_WORKER=0 leaves it out).
// `node --import tsx bench/cost.ts` — env BENCH_ROUNDS (3), BENCH_WITHOUT (every feature), and the bench's knobs.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createPool, migrate } from "hookledger";
import { floor } from "./contenders/floor.js";
import { hookledgerServe, ingestThenStorm, rawHmac, startPeer } from "./contenders/http.js";
import { benchSecret } from "./contenders/loadgen-run.js";
import { hookledgerWorker, hookledgerWorkerC10 } from "./contenders/workers.js";
import { runRounds } from "./contenders/rounds.js";
import type { Contender } from "./contenders/types.js";
import { stopChild } from "./lib/child.js";
import { pgPort } from "./lib/cpu.js";
import { benchEnv } from "./lib/env.js";
import { dropSchema, freshSchema } from "./lib/schemas.js";
import { fmt, type SummaryRow, summarize, summaryTable, table } from "./report.js";

const env = benchEnv({ BENCH_ROUNDS: "3", ...process.env });
const root = fileURLToPath(new URL("..", import.meta.url));
const logDir = join(root, "bench", "results", "logs");
const features = (process.env.BENCH_WITHOUT ?? "verify,parse,claim,stats,metrics,logs,cache").split(",");
// The worker (P3) without its `event settled` lines; its other features have no bench-only switch yet.
const quietWorker = hookledgerWorker("c10-quiet", 10, false, "logs");
const label = (without: string) => (without === "none" ? "cost: all features" : `cost: without ${without}`);

function costContender(without: string): Contender {
  return {
    name: label(without),
    rows: [
      [`${label(without)}: unique`, "req/s"],
      ...(without === "claim" ? [] : [[`${label(without)}: duplicate storm`, "req/s"] as const]),
    ],
    async run(ctx) {
      const schema = await freshSchema(ctx.admin, "cost", false);
      const pool = createPool({ connectionString: ctx.env.url, role: "admin", max: 1 });
      try {
        await migrate(pool, schema);
      } finally {
        await pool.end();
      }
      const secret = benchSecret();
      try {
        const [server, url] = await startPeer(ctx, "cost.ts", {
          BENCH_WITHOUT: without,
          BENCH_SCHEMA: schema,
          BENCH_STRIPE_SECRET: secret,
        });
        try {
          const ledger = without !== "claim";
          return await ingestThenStorm(ctx, { label: label(without), server, url, schema, secret, ledger });
        } finally {
          await stopChild(server);
        }
      } finally {
        await dropSchema(ctx.admin, schema);
      }
    },
  };
}

// One line per feature and phase: what the path with every feature spends per delivery beyond the path without it.
function costTable(rows: readonly SummaryRow[], phase: "unique" | "duplicate storm"): string {
  const all = rows.find((r) => r.name === `${label("none")}: ${phase}`);
  const lines = features.flatMap((f) => {
    const r = rows.find((x) => x.name === `${label(f)}: ${phase}`);
    if (!r || !all) return [];
    return [
      [
        f,
        fmt(all.processUsPerOp - r.processUsPerOp, 0),
        fmt(all.backendsUsPerOp - r.backendsUsPerOp, 0),
        fmt(r.perSecond / all.perSecond, 2),
      ],
    ];
  });
  return table(["feature", "server µs/delivery", "Postgres µs/delivery", "rate without ÷ with"], lines);
}

mkdirSync(logDir, { recursive: true });
const admin = new pg.Client({ connectionString: env.url, application_name: "hookledger-bench" });
await admin.connect();
try {
  const workers = process.env.BENCH_COST_WORKER === "0" ? [] : [hookledgerWorkerC10, quietWorker];
  const contenders = [
    rawHmac,
    floor,
    hookledgerServe,
    costContender("none"),
    ...features.map(costContender),
    ...workers,
  ];
  const results = await runRounds(contenders, { env, admin, pgPort: pgPort(env.url), logDir, root });
  const rows = summarize(results);
  console.log(`\nmedians over ${env.rounds} rounds\n${summaryTable(rows)}`);
  console.log(
    `\nunique ingest: what each feature costs (all features minus without it)\n${costTable(rows, "unique")}`,
  );
  console.log(`\nduplicate storm: the same\n${costTable(rows, "duplicate storm")}`);
  const [worker, quiet] = [hookledgerWorkerC10, quietWorker].map((c) =>
    rows.find((r) => r.name === c.rows[0]?.[0]),
  );
  if (worker && quiet) {
    console.log(
      `\nworker c10: logs cost ${fmt(worker.processUsPerOp - quiet.processUsPerOp, 0)} µs of its CPU and ${fmt(worker.backendsUsPerOp - quiet.backendsUsPerOp, 0)} µs of Postgres per event; rate without ÷ with ${fmt(quiet.perSecond / worker.perSecond, 2)}`,
    );
  }
} finally {
  await admin.end();
}
