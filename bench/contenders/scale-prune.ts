// The scale mode's last phase (docs/benchmarks.md, "Scale"): ingest p99 while `hookledger prune` deletes a day of
// the filled rows, against the window just before it. A window's p99 at 300 req/s is its ~120 slowest requests,
// so one stall (a checkpoint, a vacuum) moves it as much as the prune may; the phase therefore prunes one day per
// pair of windows, three times, and judges the median pair, printing each pair and how far the "before" windows
// moved between themselves (the noise the verdict is read against).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { median } from "../lib/stats.js";
import { clearRun, FILL_DAYS } from "./scale-ledger.js";
import type { ScaleLine } from "./scale.js";
import type { RunContext, RunResult } from "./types.js";

const PAIRS = 3;

const CONFIG = (ctx: RunContext) => join(ctx.root, "bench", "peers", "hookledger.config.mjs");

/** Ingest at the phase's rate for one window, with `alongside` started with it and awaited by its end. */
export type Window = (name: string, alongside?: () => Promise<void>) => Promise<RunResult>;

/**
 * Three pairs of windows (before, during a prune of the oldest remaining day); the line judges the median of the
 * three during ÷ before ratios of the ingest p99.
 *
 * @example
 * lines.push(await prunePairs(ctx, schema, 300, (name, alongside) => steady(…).then((r) => r.ingest)));
 */
export async function prunePairs(
  ctx: RunContext,
  schema: string,
  rate: number,
  window: Window,
): Promise<ScaleLine> {
  const p99 = (r: RunResult) => r.p99 ?? Number.NaN;
  const befores: RunResult[] = [];
  const durings: RunResult[] = [];
  const ratios: number[] = [];
  let valid = true;
  console.log(
    `prune under load: ${rate} req/s, ${PAIRS} pairs of windows, each \`hookledger prune --older-than <d> ${pruneFlags(ctx).join(" ")}\` of one more day`,
  );
  for (let i = 0; i < PAIRS; i++) {
    const olderThan = `${34 + FILL_DAYS - i}d`;
    await clearRun(ctx.admin, schema);
    const before = await window(`scale: steady, before prune ${i + 1}`);
    let seconds = Number.NaN;
    const during = await window(`scale: steady, during prune ${i + 1}`, async () => {
      const began = performance.now();
      await prune(ctx, schema, olderThan);
      seconds = (performance.now() - began) / 1000;
    });
    const left = (await ctx.admin.query<{ n: string }>(`select count(*) as n from ${schema}.events`)).rows[0]
      ?.n;
    const ratio = p99(during) / p99(before);
    console.log(
      `  pair ${i + 1} (--older-than ${olderThan}): p99 ${p99(before).toFixed(1)} → ${p99(during).toFixed(1)} ms = ${ratio.toFixed(2)}×; prune ${seconds.toFixed(1)} s; ${left} rows left`,
    );
    befores.push(before);
    durings.push(during);
    ratios.push(ratio);
    valid &&= before.valid && during.valid;
  }
  const drift = befores.slice(1).map((b, i) => (p99(b) / p99(befores[i] as RunResult)).toFixed(2));
  console.log(`  noise: each "before" p99 ÷ the previous one: ${drift.join(", ")}`);
  const ratio = median(ratios);
  return {
    what: `ingest p99 ms during prune (median of ${PAIRS})`,
    empty: median(befores.map(p99)),
    // The medians of each side: the ratio is the median of the pairs' ratios, not their quotient.
    full: median(durings.map(p99)),
    ratio,
    target: "≤ 1.1×",
    verdict: !valid ? "INVALID" : ratio <= 1.1 ? "PASS" : "FAIL",
  };
}

function pruneFlags(ctx: RunContext): string[] {
  return [
    ...(ctx.env.pruneDuty === undefined ? [] : ["--duty", ctx.env.pruneDuty]),
    ...(ctx.env.pruneBatch === undefined ? [] : ["--batch-size", ctx.env.pruneBatch]),
  ];
}

function prune(ctx: RunContext, schema: string, olderThan: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(ctx.root, "dist", "cli", "main.js"),
        "prune",
        "--older-than",
        olderThan,
        "--source",
        "stripe",
        ...pruneFlags(ctx),
        "--config",
        CONFIG(ctx),
      ],
      {
        env: {
          ...process.env,
          DATABASE_URL: ctx.env.url,
          HOOKLEDGER_SCHEMA: schema,
          BENCH_STRIPE_SECRET: "whsec_scale",
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("exit", (code) => {
      console.log(`  prune: ${out.trim().split("\n").join(" | ")}`);
      code === 0 ? resolve() : reject(new Error(`hookledger prune exited ${code}`));
    });
  });
}
