// The opt-in soak (BENCH_SOAK seconds): `hookledger serve --no-worker` under unique ingest for that long, its
// resident memory sampled every 5 s. Reports the peak of the first minute, of the last minute, and VmHWM overall.
import { memoryMB } from "../lib/proc.js";
import { stopChild } from "../lib/child.js";
import { dropSchema } from "../lib/schemas.js";
import { loadRun, withProblems } from "./loadgen-run.js";
import { startServe } from "./http.js";
import type { RunContext, RunResult } from "./types.js";

/** What the soak measured. */
export interface SoakResult {
  readonly run: RunResult;
  readonly seconds: number;
  readonly rate: number | undefined;
  /** [seconds since the start, VmRSS MB] every 5 s. */
  readonly samples: readonly (readonly [number, number])[];
  readonly firstMinutePeakMB: number;
  readonly lastMinutePeakMB: number;
  readonly peakMB: number;
}

/**
 * Runs the soak and returns its samples.
 *
 * @example
 * const soak = await runSoak({ ...ctx, round: 0 });
 */
export async function runSoak(ctx: RunContext): Promise<SoakResult> {
  const seconds = ctx.env.soakSeconds;
  const rate = ctx.env.soakRate > 0 ? ctx.env.soakRate : undefined;
  const { server, url, schema, secret } = await startServe(ctx, "soak");
  const pid = server.pid as number;
  const samples: [number, number][] = [];
  const began = performance.now();
  const sample = () => {
    const rss = memoryMB(pid, "VmRSS");
    if (rss !== undefined) samples.push([(performance.now() - began) / 1000, rss]);
  };
  try {
    const { run } = await loadRun(ctx, {
      name: "hookledger serve: soak",
      url,
      path: "/webhooks/stripe",
      serverPid: pid,
      secret,
      mode: "unique",
      prefix: "evt_soak",
      // Stripe signatures stay valid for 300 s: sign a minute's worth up front, the rest as they are sent.
      count: Math.min(100_000, (rate ?? ctx.env.prebuiltRate) * 60),
      expect: '"status":"accepted"',
      expectId: true,
      seconds,
      warmupSeconds: 0,
      ...(rate !== undefined && { rate }),
      during: sample,
    });
    sample();
    const peakMB = memoryMB(pid, "VmHWM") ?? Number.NaN;
    const end = samples.at(-1)?.[0] ?? 0;
    const peakOf = (from: number, to: number) =>
      Math.max(...samples.filter(([t]) => t >= from && t <= to).map(([, mb]) => mb));
    const firstMinutePeakMB = peakOf(0, 60);
    const lastMinutePeakMB = peakOf(end - 60, end);
    return {
      run: withProblems(run, samples.length < 2 ? ["too few memory samples"] : [], { peakRssMB: peakMB }),
      seconds,
      rate,
      samples,
      firstMinutePeakMB,
      lastMinutePeakMB,
      peakMB,
    };
  } finally {
    await stopChild(server);
    await dropSchema(ctx.admin, schema);
  }
}
