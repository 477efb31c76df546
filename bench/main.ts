// `npm run bench` (after the footprint): hookledger against its peers in one run. Every round runs every contender
// once, in an order rotated by the round, with the same signed 2 KB Stripe bodies and the same connections; then one
// table of medians over the rounds, the issue's targets with a verdict each, and bench/results/last.json.
// docs/benchmarks.md describes the contenders, the table and the knobs.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { floor } from "./contenders/floor.js";
import { hookledgerServe, hookledgerServePgbouncer, naive, rawHmac } from "./contenders/http.js";
import { forwarding } from "./contenders/forward.js";
import { forwardLatency } from "./contenders/forward-latency.js";
import { findPgbench, pgbench } from "./contenders/pgbench.js";
import { runRounds } from "./contenders/rounds.js";
import { runScale } from "./contenders/scale.js";
import { runSoak, type SoakResult } from "./contenders/soak.js";
import type { Contender } from "./contenders/types.js";
import {
  defaultWorkerConcurrency,
  graphileWorker,
  hookledgerWorkerAdvance,
  hookledgerWorkerC10,
  hookledgerWorkerDefault,
  hookledgerWorkerPgbouncer,
} from "./contenders/workers.js";
import { stopAllChildren } from "./lib/child.js";
import { pgPort } from "./lib/cpu.js";
import { benchEnv, redact, selected } from "./lib/env.js";
import { dropAllSchemas } from "./lib/schemas.js";
import { runLine, summarize, summaryTable, table, targetTable } from "./report.js";
import { judge } from "./targets.js";

const env = benchEnv(process.env);
const root = fileURLToPath(new URL("..", import.meta.url));
const resultsDir = join(root, "bench", "results");
const logDir = join(resultsDir, "logs");

const ALL: readonly Contender[] = [
  pgbench,
  naive,
  rawHmac,
  floor,
  hookledgerServe,
  hookledgerServePgbouncer,
  graphileWorker,
  hookledgerWorkerC10,
  hookledgerWorkerPgbouncer,
  hookledgerWorkerDefault,
  hookledgerWorkerAdvance,
  forwarding,
  forwardLatency,
];

let cleaning: Promise<void> | undefined;
async function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await stopAllChildren();
    const admin = new pg.Client({ connectionString: env.url, application_name: "hookledger-bench-cleanup" });
    try {
      await admin.connect();
      await dropAllSchemas(admin);
    } catch (error) {
      console.error(`cleanup: ${(error as Error).message}`);
    } finally {
      await admin.end().catch(() => {});
    }
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the contenders' processes and dropping their schemas`);
    void cleanup().then(() => process.exit(130));
  });
}

function header(pgVersion: string, contenders: readonly Contender[]): void {
  const cpu = cpus()[0]?.model.trim() ?? "?";
  console.log("hookledger bench: hookledger and its peers, interleaved in one run (docs/benchmarks.md)");
  console.log(
    `  database  ${redact(env.url)} (${env.urlFromEnv ? "DATABASE_URL" : "default; set DATABASE_URL to change"}), ${pgVersion}`,
  );
  console.log(
    `  machine   node ${process.version}, ${availableParallelism()} CPUs (${cpu}), load average ${(loadavg()[0] ?? 0).toFixed(1)}; load generator, servers and Postgres share it`,
  );
  console.log(
    `  load      ${env.rounds} rounds × (${env.warmupSeconds} s warm-up + ${env.seconds} s window), ${env.connections} connections, signed Stripe bodies of ${env.bodyBytes} B`,
  );
  console.log(
    `  workers   ${env.events} events over ${env.entities} entities; graphile-worker c10, hookledger c10 and default (c${defaultWorkerConcurrency()})`,
  );
  console.log(`  contenders ${contenders.map((c) => c.name).join(", ")}; logs in bench/results/logs`);
  if (env.serveNodeFlags.length > 0) console.log(`  serve     node ${env.serveNodeFlags.join(" ")}`);
}

// biome.json checks every file of the tree, the git-ignored bench/results too: lay the JSON out as biome would, so a
// `npm run format:check` after a bench stays clean.
function formatLikeTheRepo(file: string): void {
  const biome = join(root, "node_modules", ".bin", "biome");
  if (!existsSync(biome)) return;
  const done = spawnSync(biome, ["format", "--write", file], { cwd: root, stdio: "pipe" });
  if (done.status !== 0) console.error(`biome format ${file} failed: ${done.stderr}`);
}

async function main(): Promise<number> {
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const admin = new pg.Client({ connectionString: env.url, application_name: "hookledger-bench" });
  await admin.connect();
  const began = performance.now();
  const loadBefore = loadavg()[0] ?? 0;
  try {
    const pgVersion =
      (await admin.query<{ v: string }>("select version() as v")).rows[0]?.v.split(" on ")[0] ?? "?";
    if (env.scale) return await scaleMode(admin, pgVersion);
    const contenders = ALL.filter((c) => selected(env.only, c.name));
    header(pgVersion, contenders);
    if (contenders.some((c) => c === pgbench) && !findPgbench())
      console.log("  pgbench   not installed: skipped");
    const results = await runRounds(contenders, { env, admin, pgPort: pgPort(env.url), logDir, root });
    let soak: SoakResult | undefined;
    if (env.soakSeconds > 0 && selected(env.only, "soak")) {
      console.log(
        `\nsoak: hookledger serve --no-worker, unique ingest for ${env.soakSeconds} s${env.soakRate > 0 ? ` at ≤ ${env.soakRate} req/s` : ""}, RSS every 5 s`,
      );
      try {
        soak = await runSoak({ env, admin, pgPort: pgPort(env.url), logDir, round: 0, root });
        console.log(runLine(soak.run));
        console.log(
          `    RSS samples (s: MB): ${soak.samples.map(([t, mb]) => `${t.toFixed(0)}: ${mb.toFixed(0)}`).join(", ")}`,
        );
      } catch (error) {
        console.log(`  soak failed: ${(error as Error).message}`);
      }
    }

    const rows = summarize(results);
    const targets = judge(rows, results, soak);
    const minutes = (performance.now() - began) / 60_000;
    console.log(
      `\nsummary: medians over valid rounds (${minutes.toFixed(1)} min; load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? 0).toFixed(1)} after)`,
    );
    console.log(rows.length > 0 ? summaryTable(rows) : "  (no contender ran in the rounds)");
    console.log("\ntargets (issue 36 for P1–P3): ratios of the medians above, each beside its goal");
    console.log(targetTable(targets));
    const invalid = rows.filter((r) => r.problems.length > 0);
    for (const r of invalid) console.log(`\nINVALID ${r.name}:\n  ${r.problems.join("\n  ")}`);
    console.log(
      "\nnote: absolute figures depend on this machine and whatever else runs on it; compare within one run.",
    );
    writeFileSync(
      join(resultsDir, "last.json"),
      `${JSON.stringify(
        {
          finishedAt: new Date().toISOString(),
          database: redact(env.url),
          postgres: pgVersion,
          node: process.version,
          cpus: availableParallelism(),
          loadAverage: { before: loadBefore, after: loadavg()[0] ?? 0 },
          knobs: { ...env, url: redact(env.url) },
          summary: rows,
          targets,
          soak,
          runs: results,
        },
        null,
        2,
      )}\n`,
    );
    formatLikeTheRepo(join(resultsDir, "last.json"));
    console.log("written: bench/results/last.json");
    const failed = targets.some((t) => t.verdict === "FAIL");
    if (invalid.length > 0 || targets.some((t) => t.verdict === "INVALID")) return 1;
    return env.strict && failed ? 1 : 0;
  } finally {
    await admin.end().catch(() => {});
  }
}

// BENCH_SCALE=1: the scale mode alone (docs/benchmarks.md, "Scale"), its table, and bench/results/scale.json.
async function scaleMode(admin: pg.Client, pgVersion: string): Promise<number> {
  const began = performance.now();
  console.log(
    `hookledger bench, scale mode: ${env.scaleRows} settled rows, ${env.scaleMinutes} min of long transactions, steady ingest at ${env.scaleRate} req/s; phases ${[...env.scalePhases].join(", ")}; ${pgVersion}, load average ${(loadavg()[0] ?? 0).toFixed(1)}`,
  );
  // Dead tuples are the scale mode's subject: a cluster without autovacuum never removes them, whatever the ledger.
  const autovacuum = (await admin.query<{ v: string }>("select current_setting('autovacuum') as v")).rows[0]
    ?.v;
  if (autovacuum !== "on") {
    console.log(
      `  note: autovacuum is ${autovacuum} in this cluster, so nothing removes dead tuples; the dead-tuple and pick figures show a ledger never vacuumed`,
    );
  }
  const lines = await runScale(
    { env, admin, pgPort: pgPort(env.url), logDir, round: 0, root },
    { rows: env.scaleRows, minutes: env.scaleMinutes, rate: env.scaleRate, phases: env.scalePhases },
  );
  const fmt = (n: number) => (Number.isNaN(n) ? "-" : n >= 100 ? n.toFixed(0) : n.toFixed(2));
  console.log(
    `\nscale (${((performance.now() - began) / 60_000).toFixed(1)} min): empty or before → full or during`,
  );
  console.log(
    table(
      ["measure", "empty", "full", "ratio", "target", "verdict"],
      lines.map((l) => [l.what, fmt(l.empty), fmt(l.full), fmt(l.ratio), l.target, l.verdict]),
    ),
  );
  const file = join(resultsDir, "scale.json");
  writeFileSync(
    file,
    `${JSON.stringify({ finishedAt: new Date().toISOString(), postgres: pgVersion, knobs: { ...env, url: redact(env.url) }, lines }, null, 2)}\n`,
  );
  formatLikeTheRepo(file);
  console.log("written: bench/results/scale.json");
  if (lines.some((l) => l.verdict === "INVALID")) return 1;
  return env.strict && lines.some((l) => l.verdict === "FAIL") ? 1 : 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  console.error("bench failed:", error);
  process.exitCode = 1;
} finally {
  await cleanup();
}
