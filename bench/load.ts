import { performance } from "node:perf_hooks";

/** What one operation reports: `null` when it answered as expected, else a short description of what it got. */
export type OpResult = string | null;

/** The measurements of one load run. */
export interface LoadRun {
  readonly ops: number;
  readonly elapsedMs: number;
  /** Per-operation latency in milliseconds, in index order. */
  readonly latencies: Float64Array;
  /** Index and description of every operation that did not answer as expected (thrown errors included). */
  readonly unexpected: readonly { readonly index: number; readonly got: string }[];
  /** Share of the run this process's event loop was busy (0–1): near 1, the load generator itself is a limit. */
  readonly eventLoopBusy: number;
}

/**
 * Runs `op(0) … op(ops - 1)` with at most `concurrency` in flight: each of `concurrency` lanes takes the next index
 * as soon as its previous operation settles (closed loop, like a sender holding that many connections). Once
 * `signal` aborts, lanes start nothing new.
 *
 * @example
 * const run = await runLoad(20_000, 64, async (i) => ((await claim(i)).status === "accepted" ? null : "duplicate"));
 */
export async function runLoad(
  ops: number,
  concurrency: number,
  op: (index: number) => Promise<OpResult>,
  signal?: AbortSignal,
): Promise<LoadRun> {
  const latencies = new Float64Array(ops);
  const unexpected: { index: number; got: string }[] = [];
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < ops && !signal?.aborted; i = next++) {
      const started = performance.now();
      let got: OpResult;
      try {
        got = await op(i);
      } catch (error) {
        got = `threw: ${(error as Error).message}`;
      }
      latencies[i] = performance.now() - started;
      if (got !== null) unexpected.push({ index: i, got });
    }
  };
  const loop = performance.eventLoopUtilization();
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, ops) }, lane));
  const elapsedMs = performance.now() - started;
  const eventLoopBusy = performance.eventLoopUtilization(loop).utilization;
  return { ops, elapsedMs, latencies, unexpected, eventLoopBusy };
}

/** Throughput and latency percentiles of a run. */
export interface Summary {
  readonly ops: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  readonly eventLoopBusy: number;
}

/**
 * Summarises a run: operations per second over the wall time, and nearest-rank p50 and p99 latencies.
 *
 * @example
 * const { perSecond, p50, p99 } = summarize(run);
 */
export function summarize(run: LoadRun): Summary {
  const sorted = Float64Array.from(run.latencies).sort();
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
  return {
    ops: run.ops,
    perSecond: (run.ops / run.elapsedMs) * 1000,
    p50: rank(50),
    p99: rank(99),
    eventLoopBusy: run.eventLoopBusy,
  };
}
