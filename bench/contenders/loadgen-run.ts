// Runs bench/loadgen.ts against a server process and measures the server's side of the window: CPU (its process and
// its Postgres backends) between the load generator's "start" and "stop".
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { spawnChild, nextMessage, stopChild } from "../lib/child.js";
import { CpuTracker } from "../lib/cpu.js";
import type { LoadgenResult, LoadgenSpec } from "../loadgen.js";
import type { RunContext, RunResult } from "./types.js";

/**
 * A fresh Stripe signing secret for one server.
 *
 * @example
 * const secret = benchSecret(); // "whsec_bench_…"
 */
export const benchSecret = () => `whsec_bench_${randomBytes(12).toString("hex")}`;

/** What a load run needs besides the shared knobs. */
export interface LoadRunOptions {
  /** The summary table's row. */
  readonly name: string;
  readonly url: string;
  readonly path: string;
  readonly serverPid: number;
  readonly secret: string;
  readonly mode: LoadgenSpec["mode"];
  readonly prefix: string;
  readonly count: number;
  readonly offset?: number;
  readonly expect: string;
  readonly expectId: boolean;
  readonly seconds?: number;
  readonly warmupSeconds?: number;
  readonly rate?: number;
  /** Called while the load runs (the soak samples memory). */
  readonly during?: () => void;
}

/**
 * Runs the load generator once and returns the row (valid unless some answer was unexpected) and its raw report.
 *
 * @example
 * const { run, load } = await loadRun(ctx, { name: "naive receiver", url, path: "/webhooks/stripe", … });
 */
export async function loadRun(
  ctx: RunContext,
  options: LoadRunOptions,
): Promise<{ run: RunResult; load: LoadgenResult }> {
  const seconds = options.seconds ?? ctx.env.seconds;
  const warmupSeconds = options.warmupSeconds ?? ctx.env.warmupSeconds;
  const spec: LoadgenSpec = {
    url: options.url,
    path: options.path,
    connections: ctx.env.connections,
    warmupSeconds,
    seconds,
    secret: options.secret,
    bodyBytes: ctx.env.bodyBytes,
    prefix: options.prefix,
    mode: options.mode,
    count: options.count,
    ...(options.offset !== undefined && { offset: options.offset }),
    expect: options.expect,
    expectId: options.expectId,
    ...(options.rate !== undefined && { rate: options.rate }),
  };
  const slug = options.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
  const child = spawnChild(process.execPath, ["--import", "tsx", join(ctx.root, "bench", "loadgen.ts")], {
    env: { BENCH_LOADGEN: JSON.stringify(spec) },
    logFile: join(ctx.logDir, `loadgen-${slug}-r${ctx.round}.log`),
    ipc: true,
  });
  const cpu = new CpuTracker(ctx.admin, () => [options.serverPid], ctx.pgPort);
  try {
    await nextMessage(child, (m) => m.phase === "ready", 300_000, "the load generator's bodies");
    const longest = (warmupSeconds + seconds) * 1000 + 120_000;
    const started = nextMessage(child, (m) => m.phase === "start", longest, "the window's start");
    const stopped = nextMessage(child, (m) => m.phase === "stop", longest, "the window's end");
    const reported = nextMessage<LoadgenResult>(
      child,
      (m) => m.phase === "result",
      longest,
      "the load report",
    );
    stopped.catch(() => {});
    reported.catch(() => {});
    const sampler = options.during ? setInterval(options.during, 5000) : undefined;
    child.send("go");
    try {
      await started;
      await cpu.start();
      await stopped;
    } finally {
      clearInterval(sampler);
    }
    const split = await cpu.stop();
    const load = await reported;
    const problems: string[] = [];
    const unexpected = load.warmup.unexpected + load.window.unexpected + load.drain.unexpected;
    if (unexpected > 0) {
      problems.push(
        `${unexpected} unexpected answers (warm-up ${load.warmup.unexpected}, window ${load.window.unexpected}, drain ${load.drain.unexpected}): ${load.samples.map((s) => `${s.count} × ${s.answer}`).join("; ")}`,
      );
    }
    if (load.window.requests === 0) problems.push("no request completed in the window");
    const notes: string[] = [];
    if (load.signedLive > 0)
      notes.push(`${load.signedLive} bodies signed during the run (pre-signed ran out)`);
    if (load.loopBusy > 0.9)
      notes.push(`load generator busy ${(load.loopBusy * 100).toFixed(0)} %: it may be the limit`);
    return {
      load,
      run: {
        name: options.name,
        round: ctx.round,
        unit: "req/s",
        valid: problems.length === 0,
        problems,
        ops: load.window.requests,
        seconds,
        perSecond: load.window.perSecond,
        p50: load.window.p50,
        p99: load.window.p99,
        cpu: split,
        loadgenCpu: load.cpuSeconds,
        loadgenBusy: load.loopBusy,
        statuses: load.window.statuses,
        notes,
      },
    };
  } finally {
    cpu.cancel();
    await stopChild(child, "SIGTERM", 2000);
  }
}

/**
 * Every request of a run, warm-up and drain included, that was answered as expected.
 *
 * @example
 * const rows = answeredOk(load); // must equal the rows the server wrote
 */
export function answeredOk(load: LoadgenResult): number {
  const ok = (c: LoadgenResult["warmup"]) => c.requests - c.unexpected;
  return ok(load.warmup) + ok(load.window) + ok(load.drain);
}

/**
 * A copy of `run` with more problems (a failed check after the run), marked invalid if there are any.
 *
 * @example
 * return withProblems(run, rows === answered ? [] : [`${rows} rows for ${answered} answers`]);
 */
export function withProblems(
  run: RunResult,
  problems: readonly string[],
  extra: Partial<RunResult> = {},
): RunResult {
  const all = [...run.problems, ...problems];
  return { ...run, ...extra, problems: all, valid: all.length === 0 };
}
