// The scale mode's paired rounds (docs/benchmarks.md, "Scale"): windows of unique ingest and of the worker on an
// empty and a full ledger in turn, and the full ÷ empty line of the table they make.
import { stopChild } from "../lib/child.js";
import { median } from "../lib/stats.js";
import { startServe } from "./http.js";
import { type LoadRunOptions, loadRun } from "./loadgen-run.js";
import type { ScaleLine } from "./scale.js";
import { clearRun } from "./scale-ledger.js";
import type { RunContext, RunResult } from "./types.js";
import { runWorker } from "./workers.js";

/**
 * The Stripe load of every scale window: unique deliveries, each answered "accepted" with its id.
 *
 * @example
 * const run = await uniqueWindow(ctx, await startServe(ctx, "scale", { schema }), "scale: ingest", { prefix, count });
 */
export async function uniqueWindow(
  ctx: RunContext,
  target: Awaited<ReturnType<typeof startServe>>,
  name: string,
  options: Pick<LoadRunOptions, "prefix" | "count" | "seconds" | "warmupSeconds" | "rate">,
): Promise<RunResult> {
  const { run } = await loadRun(ctx, {
    name,
    url: target.url,
    path: "/webhooks/stripe",
    serverPid: target.server.pid as number,
    secret: target.secret,
    mode: "unique",
    expect: '"status":"accepted"',
    expectId: true,
    ...options,
  });
  return run;
}

async function ingest(ctx: RunContext, schema: string, name: string): Promise<RunResult> {
  const target = await startServe(ctx, "scale", { schema });
  try {
    return await uniqueWindow(ctx, target, name, {
      prefix: `evt_u${Date.now().toString(36)}`,
      count: ctx.env.prebuiltRate * (ctx.env.seconds + ctx.env.warmupSeconds),
    });
  } finally {
    await stopChild(target.server);
  }
}

async function worker(ctx: RunContext, schema: string, name: string): Promise<RunResult> {
  return runWorker(ctx, {
    name,
    script: "hookledger-worker.ts",
    env: { BENCH_SCHEMA: schema, BENCH_STRIPE_SECRET: "whsec_scale", BENCH_WORKER_CONCURRENCY: "10" },
    pendingSql: `select exists (select 1 from ${schema}.events where status in ('pending', 'failed')) as pending`,
    appSchema: schema,
    check: async () => {
      const { rows } = await ctx.admin.query<{ n: string }>(
        `select count(*) as n from ${schema}.events where dedupe_key like 'evt\\_w\\_%' and outcome = 'applied'`,
      );
      const n = Number(rows[0]?.n);
      return n === ctx.env.events ? [] : [`${n} worker events applied of ${ctx.env.events}`];
    },
  });
}

// A single window of either kind moved by up to ±30 % between runs on this 2-core machine (0.71 to 1.16 full ÷
// empty on 2026-12-02), as much as the 0.9× target allows, so one pair of windows is no verdict. Even, so that each
// ledger goes first in as many rounds as the other: the second window of a round came out faster than the first in
// each round of a 200,000-row run, whichever ledger it was (docs/benchmarks.md, "Scale").
export const ROUNDS = 4;

/** One ledger's windows, in round order. */
export interface Rounds {
  readonly ingest: RunResult[];
  readonly worker: RunResult[];
}

/** The two ledgers the rounds compare: one filled, one migrated and left empty, side by side in one cluster. */
export interface Ledgers {
  readonly empty: string;
  readonly full: string;
}

/**
 * Runs {@link ROUNDS} rounds, each a window of unique ingest on either ledger, then the worker on either ledger, the
 * run's rows cleared after each window, and prints every window as it ends. The ledgers take turns going first
 * (empty first in odd rounds): while the empty ledger was measured before the fill, it came out slower than the full
 * one in every run (docs/benchmarks.md, "Scale").
 *
 * @example
 * const measured = await rounds(ctx, { empty, full }, console.log);
 */
export async function rounds(
  ctx: RunContext,
  ledgers: Ledgers,
  log: (line: string) => void,
): Promise<Record<keyof Ledgers, Rounds>> {
  const done: Record<keyof Ledgers, Rounds> = {
    empty: { ingest: [], worker: [] },
    full: { ingest: [], worker: [] },
  };
  for (let i = 1; i <= ROUNDS; i++) {
    const order: (keyof Ledgers)[] = i % 2 === 1 ? ["empty", "full"] : ["full", "empty"];
    for (const kind of ["ingest", "worker"] as const) {
      for (const side of order) {
        const name = `scale: ${kind === "ingest" ? "ingest" : "worker c10"}, ${side} ${i}`;
        const run = await (kind === "ingest" ? ingest : worker)(ctx, ledgers[side], name);
        await clearRun(ctx.admin, ledgers[side]);
        done[side][kind].push(run);
        report(run, log);
      }
    }
  }
  return done;
}

/**
 * Prints one window's figure.
 *
 * @example
 * report(run, console.log);
 */
export function report(r: RunResult, log: (line: string) => void): void {
  log(
    `  ${r.name}: ${r.perSecond.toFixed(0)} ${r.unit}, p99 ${r.p99?.toFixed(1) ?? "-"} ms ${r.problems.join("; ")}`,
  );
}

const medianRate = (runs: readonly RunResult[]) => median(runs.map((r) => r.perSecond));

// Full ÷ empty of each round's pair of windows, and their geometric mean: a round's second window gains on its first
// by some factor, and the product of the ratios cancels it when each ledger goes first in half the rounds.
function pairedRatios(empty: readonly RunResult[], full: readonly RunResult[]) {
  const each = full.map((r, i) => r.perSecond / (empty[i]?.perSecond ?? Number.NaN));
  const mean = Math.exp(each.reduce((sum, r) => sum + Math.log(r), 0) / each.length);
  return { each, mean };
}

/**
 * PASS or FAIL for `ok`, INVALID when any of `runs` is.
 *
 * @example
 * verdict(ratio >= 0.9, ...runs);
 */
export function verdict(ok: boolean, ...runs: RunResult[]): "PASS" | "FAIL" | "INVALID" {
  return runs.some((r) => !r.valid) ? "INVALID" : ok ? "PASS" : "FAIL";
}

/**
 * The table's line for one kind of window: each ledger's median, and the geometric mean of the paired ratios
 * against ≥ 0.9×; each round's ratio is printed.
 *
 * @example
 * lines.push(pairedLine("unique ingest req/s", measured.empty.ingest, measured.full.ingest, console.log));
 */
export function pairedLine(
  what: string,
  empty: readonly RunResult[],
  full: readonly RunResult[],
  log: (line: string) => void,
): ScaleLine {
  const ratios = pairedRatios(empty, full);
  log(
    `  ${what}: full ÷ empty by round ${ratios.each.map((r) => r.toFixed(2)).join(", ")}; geometric mean ${ratios.mean.toFixed(2)}`,
  );
  return {
    what: `${what} (medians of ${ROUNDS}; ratio: paired)`,
    empty: medianRate(empty),
    full: medianRate(full),
    ratio: ratios.mean,
    target: "≥ 0.9×",
    verdict: verdict(ratios.mean >= 0.9, ...empty, ...full),
  };
}
