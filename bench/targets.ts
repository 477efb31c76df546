// The targets `npm run bench` judges (issue 36 for P1–P3, issue 9 for P4 and forwarding): each a ratio of two rows'
// medians in the same run, printed beside its goal with a verdict. docs/benchmarks.md lists them.
import type { SoakResult } from "./contenders/soak.js";
import type { RunResult } from "./contenders/types.js";
import { fmt, ROWS, type SummaryRow, type TargetResult } from "./report.js";

// What a ratio compares: a rate must reach its goal (≥); latencies and CPU per operation stay within it (≤).
interface Measure {
  readonly atMost: boolean;
  readonly unit: string;
  readonly row: (r: SummaryRow) => number;
  readonly run: (r: RunResult) => number | undefined;
}

const usPerOp = (r: RunResult, part: "process" | "backends") =>
  r.cpu && r.ops > 0 ? (r.cpu[part] / r.ops) * 1e6 : undefined;

const RATE: Measure = { atMost: false, unit: "", row: (r) => r.perSecond, run: (r) => r.perSecond };
const P99: Measure = { atMost: true, unit: " ms", row: (r) => r.p99, run: (r) => r.p99 };
/** The contender's own process: the server's or the worker's CPU per delivery or event. */
const PROCESS_CPU: Measure = {
  atMost: true,
  unit: " µs",
  row: (r) => r.processUsPerOp,
  run: (r) => usPerOp(r, "process"),
};

function ratioTarget(
  rows: readonly SummaryRow[],
  results: readonly RunResult[],
  target: { id: string; what: string; top: string; bottom: string; goal: number; of?: Measure },
): TargetResult {
  const { id, what, top, bottom, goal } = target;
  const of = target.of ?? RATE;
  const a = rows.find((r) => r.name === top);
  const b = rows.find((r) => r.name === bottom);
  const base = { id, what, goal: `${of.atMost ? "≤" : "≥"} ${goal}×` };
  if (!a || !b) return { ...base, measured: "-", verdict: "NOT RUN" };
  if (a.validRounds === 0 || b.validRounds === 0) return { ...base, measured: "-", verdict: "INVALID" };
  const ratio = of.row(a) / of.row(b);
  const perRound: number[] = [];
  for (const ra of results.filter((r) => r.name === top && r.valid)) {
    const rb = results.find((r) => r.name === bottom && r.valid && r.round === ra.round);
    if (rb) perRound.push((of.run(ra) ?? Number.NaN) / (of.run(rb) ?? Number.NaN));
  }
  const pass = of.atMost ? ratio <= goal : ratio >= goal;
  return {
    ...base,
    measured: `${ratio.toFixed(2)}× (${fmt(of.row(a), 0)} / ${fmt(of.row(b), 0)}${of.unit})`,
    verdict: Number.isNaN(ratio) ? "INVALID" : pass ? "PASS" : "FAIL",
    perRound,
  };
}

// A bound on one row's figure rather than a ratio.
function bound(
  rows: readonly SummaryRow[],
  id: string,
  what: string,
  goal: string,
  value: number | undefined,
  pass: (value: number) => boolean,
  unit: string,
): TargetResult {
  const base = { id, what, goal };
  if (rows.length === 0) return { ...base, measured: "-", verdict: "NOT RUN" };
  if (value === undefined || !Number.isFinite(value)) return { ...base, measured: "-", verdict: "INVALID" };
  return { ...base, measured: `${fmt(value, 1)} ${unit}`, verdict: pass(value) ? "PASS" : "FAIL" };
}

/**
 * The targets P1–P4 and forwarding's from the summary (P4 from the soak too when it ran). P5 is the scale mode's
 * (`npm run bench:scale`), judged there.
 *
 * @example
 * const targets = judge(rows, results, soak);
 */
export function judge(
  rows: readonly SummaryRow[],
  results: readonly RunResult[],
  soak: SoakResult | undefined,
): TargetResult[] {
  const unique = rows.filter((r) => r.name === ROWS.unique);
  const serveRows = rows.filter((r) => r.name === ROWS.unique || r.name === ROWS.duplicate);
  const serveRss = serveRows.map((r) => r.peakRssMB).filter(Number.isFinite);
  const ratio = (t: Parameters<typeof ratioTarget>[2]) => ratioTarget(rows, results, t);
  const p1 = { id: "P1", top: ROWS.unique };
  const p3 = { id: "P3", bottom: ROWS.graphile };
  const targets: TargetResult[] = [
    ratio({ ...p1, what: "unique ingest ÷ floor", bottom: ROWS.floor, goal: 0.8 }),
    ratio({ ...p1, what: "unique ingest ÷ naive receiver", bottom: ROWS.naive, goal: 1.5 }),
    ratio({
      ...p1,
      what: "server CPU per delivery ÷ floor's",
      bottom: ROWS.floor,
      goal: 1.3,
      of: PROCESS_CPU,
    }),
    bound(
      unique,
      "P1",
      "unique ingest p99",
      "≤ 50 ms",
      unique[0]?.validRounds ? unique[0].p99 : undefined,
      (v) => v <= 50,
      "ms",
    ),
    ratio({
      id: "P2",
      what: "duplicate storm ÷ raw node:http + HMAC",
      top: ROWS.duplicate,
      bottom: ROWS.raw,
      goal: 0.8,
    }),
    ratio({ ...p3, what: "worker c10 ÷ graphile-worker c10", top: ROWS.worker, goal: 1.5 }),
    ratio({ ...p3, what: "worker c10 + advance ÷ graphile-worker c10", top: ROWS.workerAdvance, goal: 1 }),
    ratio({
      ...p3,
      what: "worker CPU per event ÷ graphile-worker's",
      top: ROWS.worker,
      goal: 1,
      of: PROCESS_CPU,
    }),
    ratio({
      id: "B1",
      what: "unique ingest via PgBouncer ÷ direct",
      top: ROWS.uniquePgbouncer,
      bottom: ROWS.unique,
      goal: 0.8,
    }),
    ratio({
      id: "B1",
      what: "worker c10 via PgBouncer ÷ direct",
      top: ROWS.workerPgbouncer,
      bottom: ROWS.worker,
      goal: 0.8,
    }),
    ratio({
      id: "F1",
      what: "forward ÷ destination ceiling",
      top: ROWS.forward,
      bottom: ROWS.forwardCeiling,
      goal: 0.8,
    }),
    ratio({
      id: "F1",
      what: "forward ÷ fetch loop c32",
      top: ROWS.forward,
      bottom: ROWS.forwardLoop,
      goal: 1,
    }),
    ratio({
      id: "F2",
      what: "forward p99, 1 % failing ÷ all healthy",
      top: ROWS.forwardLatencyFailing,
      bottom: ROWS.forwardLatency,
      goal: 2,
      of: P99,
    }),
    bound(
      serveRows,
      "P4",
      "peak RSS of serve --no-worker (this run)",
      "≤ 150 MB",
      serveRss.length > 0 ? Math.max(...serveRss) : undefined,
      (v) => v <= 150,
      "MB",
    ),
  ];
  if (soak) {
    const flat = soak.lastMinutePeakMB <= soak.firstMinutePeakMB * 1.1;
    targets.push({
      id: "P4",
      what: `soak ${soak.seconds} s: peak, first vs last minute`,
      goal: "≤ 150 MB, last ≤ first + 10 %",
      measured: `${fmt(soak.peakMB, 1)} MB; ${fmt(soak.firstMinutePeakMB, 1)} → ${fmt(soak.lastMinutePeakMB, 1)} MB`,
      verdict: !soak.run.valid ? "INVALID" : soak.peakMB <= 150 && flat ? "PASS" : "FAIL",
    });
  }
  targets.push({
    id: "P5",
    what: "scale: full ÷ empty ledger, long transactions, prune",
    measured: "-",
    goal: "npm run bench:scale",
    verdict: "NOT RUN",
  });
  return targets;
}
