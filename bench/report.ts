// The summary of a run: one row per contender (medians over its valid rounds), the targets with a verdict
// each, and the same as JSON for notes.
import type { RunResult } from "./contenders/types.js";
import type { SoakResult } from "./contenders/soak.js";
import { median } from "./lib/stats.js";

/** One contender over all rounds. */
export interface SummaryRow {
  readonly name: string;
  readonly unit: RunResult["unit"];
  readonly rounds: number;
  readonly validRounds: number;
  readonly perSecond: number;
  readonly p50: number;
  readonly p99: number;
  /** Median CPU µs per operation: the contender's process, and its Postgres backends. */
  readonly processUsPerOp: number;
  readonly backendsUsPerOp: number;
  /** Median CPU seconds over the window: Postgres's shared processes, the load generator. */
  readonly pgSharedSeconds: number;
  readonly loadgenSeconds: number;
  readonly loadgenBusy: number;
  /** The highest VmHWM over the valid rounds, MB (-Infinity when none has one). */
  readonly peakRssMB: number;
  readonly problems: readonly string[];
}

/** One of the targets. */
export interface TargetResult {
  readonly id: string;
  readonly what: string;
  readonly measured: string;
  readonly goal: string;
  readonly verdict: "PASS" | "FAIL" | "INVALID" | "NOT RUN";
  /** Per round, the same ratio from that round's two figures (rounds where both were valid). */
  readonly perRound?: readonly number[];
}

/**
 * Row names the targets read.
 *
 * @example
 * rows.find((r) => r.name === ROWS.unique);
 */
export const ROWS = {
  pgbench: "pgbench insert … on conflict",
  naive: "naive receiver",
  raw: "raw node:http + HMAC",
  unique: "hookledger serve: unique",
  duplicate: "hookledger serve: duplicate storm",
  graphile: "graphile-worker c10",
  worker: "hookledger worker c10",
  forwardCeiling: "forward: destination ceiling",
  forwardLoop: "forward: fetch loop c32",
  forward: "forward: hookledger",
  forwardLatency: "forward latency: all entities healthy",
  forwardLatencyFailing: "forward latency: 1 % of entities failing",
} as const;

/**
 * Medians per contender, in the order contenders first appear.
 *
 * @example
 * const rows = summarize(results);
 */
export function summarize(results: readonly RunResult[]): SummaryRow[] {
  const names = [...new Set(results.map((r) => r.name))];
  return names.map((name) => {
    const all = results.filter((r) => r.name === name);
    const valid = all.filter((r) => r.valid);
    const med = (f: (r: RunResult) => number | undefined) =>
      median(valid.map(f).filter((v): v is number => v !== undefined && Number.isFinite(v)));
    return {
      name,
      unit: (all[0] as RunResult).unit,
      rounds: all.length,
      validRounds: valid.length,
      perSecond: med((r) => r.perSecond),
      p50: med((r) => r.p50),
      p99: med((r) => r.p99),
      processUsPerOp: med((r) => (r.cpu && r.ops > 0 ? (r.cpu.process / r.ops) * 1e6 : undefined)),
      backendsUsPerOp: med((r) => (r.cpu && r.ops > 0 ? (r.cpu.backends / r.ops) * 1e6 : undefined)),
      pgSharedSeconds: med((r) => r.cpu?.pgShared),
      loadgenSeconds: med((r) => r.loadgenCpu),
      loadgenBusy: med((r) => r.loadgenBusy),
      peakRssMB: Math.max(...valid.map((r) => r.peakRssMB ?? Number.NaN).filter(Number.isFinite)),
      problems: all.flatMap((r) => r.problems.map((p) => `round ${r.round}: ${p}`)),
    };
  });
}

// The ratio of two rows' medians: rates must reach `goal` (≥), p99 latencies stay within it (≤).
function ratioTarget(
  rows: readonly SummaryRow[],
  results: readonly RunResult[],
  id: string,
  what: string,
  top: string,
  bottom: string,
  goal: number,
  of: "perSecond" | "p99" = "perSecond",
): TargetResult {
  const a = rows.find((r) => r.name === top);
  const b = rows.find((r) => r.name === bottom);
  const atMost = of === "p99";
  const base = { id, what, goal: `${atMost ? "≤" : "≥"} ${goal}×` };
  if (!a || !b) return { ...base, measured: "-", verdict: "NOT RUN" };
  if (a.validRounds === 0 || b.validRounds === 0) return { ...base, measured: "-", verdict: "INVALID" };
  const ratio = a[of] / b[of];
  const perRound: number[] = [];
  for (const ra of results.filter((r) => r.name === top && r.valid)) {
    const rb = results.find((r) => r.name === bottom && r.valid && r.round === ra.round);
    if (rb) perRound.push((ra[of] ?? Number.NaN) / (rb[of] ?? Number.NaN));
  }
  const unit = atMost ? " ms" : "";
  return {
    ...base,
    measured: `${ratio.toFixed(2)}× (${fmt(a[of], 0)} / ${fmt(b[of], 0)}${unit})`,
    verdict: (atMost ? ratio <= goal : ratio >= goal) ? "PASS" : "FAIL",
    perRound,
  };
}

/**
 * The targets P1–P4 from the summary (P4 from the soak too when it ran).
 *
 * @example
 * const targets = judge(rows, results, soak);
 */
export function judge(
  rows: readonly SummaryRow[],
  results: readonly RunResult[],
  soak: SoakResult | undefined,
): TargetResult[] {
  const unique = rows.find((r) => r.name === ROWS.unique);
  const serveRows = rows.filter((r) => r.name === ROWS.unique || r.name === ROWS.duplicate);
  const serveRss = serveRows.map((r) => r.peakRssMB).filter(Number.isFinite);
  const targets: TargetResult[] = [
    ratioTarget(rows, results, "P1", "unique ingest ÷ naive receiver", ROWS.unique, ROWS.naive, 3),
    ratioTarget(rows, results, "P1", "unique ingest ÷ pgbench", ROWS.unique, ROWS.pgbench, 1.5),
    {
      id: "P1",
      what: "unique ingest p99",
      goal: "≤ 50 ms",
      ...(!unique
        ? { measured: "-", verdict: "NOT RUN" as const }
        : unique.validRounds === 0
          ? { measured: "-", verdict: "INVALID" as const }
          : {
              measured: `${fmt(unique.p99, 1)} ms`,
              verdict: unique.p99 <= 50 ? ("PASS" as const) : ("FAIL" as const),
            }),
    },
    ratioTarget(rows, results, "P2", "duplicate storm ÷ raw node:http + HMAC", ROWS.duplicate, ROWS.raw, 0.8),
    ratioTarget(rows, results, "P3", "worker c10 ÷ graphile-worker c10", ROWS.worker, ROWS.graphile, 2),
    ratioTarget(rows, results, "F1", "forward ÷ destination ceiling", ROWS.forward, ROWS.forwardCeiling, 0.8),
    ratioTarget(rows, results, "F1", "forward ÷ fetch loop c32", ROWS.forward, ROWS.forwardLoop, 1),
    ratioTarget(
      rows,
      results,
      "F2",
      "forward p99, 1 % failing ÷ all healthy",
      ROWS.forwardLatencyFailing,
      ROWS.forwardLatency,
      2,
      "p99",
    ),
    {
      id: "P4",
      what: "peak RSS of serve --no-worker (this run)",
      goal: "≤ 150 MB",
      ...(serveRows.length === 0
        ? { measured: "-", verdict: "NOT RUN" as const }
        : serveRss.length === 0
          ? { measured: "-", verdict: "INVALID" as const }
          : {
              measured: `${fmt(Math.max(...serveRss), 1)} MB`,
              verdict: Math.max(...serveRss) <= 150 ? ("PASS" as const) : ("FAIL" as const),
            }),
    },
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
  return targets;
}

/**
 * A number for a table cell: `-` when it is not one.
 *
 * @example
 * fmt(Number.NaN, 1); // "-"
 */
export function fmt(n: number | undefined, digits: number): string {
  return n !== undefined && Number.isFinite(n) ? n.toFixed(digits) : "-";
}

/**
 * Lays out `rows` under `header` in aligned columns (the first left-aligned, the rest right-aligned).
 *
 * @example
 * console.log(table(["a", "b"], [["x", "1"]]));
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/**
 * The per-run line printed as each contender finishes.
 *
 * @example
 * console.log(runLine(result));
 */
export function runLine(r: RunResult): string {
  const cpu = r.cpu
    ? `cpu s: process ${fmt(r.cpu.process, 2)}, pg backends ${fmt(r.cpu.backends, 2)} (${r.cpu.backendCount}), pg shared ${fmt(r.cpu.pgShared, 2)}`
    : "cpu s: -";
  const load = r.loadgenCpu === undefined ? "" : `, load generator ${fmt(r.loadgenCpu, 2)}`;
  const latency = r.p50 === undefined ? "" : `  p50 ${fmt(r.p50, 1)} ms  p99 ${fmt(r.p99, 1)} ms`;
  const rss = r.peakRssMB === undefined ? "" : `  peak RSS ${fmt(r.peakRssMB, 1)} MB`;
  const statuses = r.statuses ? `  answers ${JSON.stringify(r.statuses)}` : "";
  const head = `  ${r.name}: ${fmt(r.perSecond, 0)} ${r.unit} (${r.ops} in ${fmt(r.seconds, 1)} s)${latency}`;
  const verdict = r.valid ? "" : `\n    INVALID: ${r.problems.join("; ")}`;
  const notes = r.notes.length > 0 ? `\n    note: ${r.notes.join("; ")}` : "";
  return `${head}\n    ${cpu}${load}${rss}${statuses}${notes}${verdict}`;
}

/**
 * The summary table: medians over valid rounds.
 *
 * @example
 * console.log(summaryTable(rows));
 */
export function summaryTable(rows: readonly SummaryRow[]): string {
  return table(
    [
      "contender",
      "valid",
      "rate",
      "unit",
      "p50 ms",
      "p99 ms",
      "cpu µs/op",
      "pg µs/op",
      "pg shared s",
      "loadgen s",
      "peak RSS MB",
    ],
    rows.map((r) => [
      r.name,
      `${r.validRounds}/${r.rounds}`,
      r.validRounds === 0 ? "INVALID" : fmt(r.perSecond, 0),
      r.unit,
      fmt(r.p50, 1),
      fmt(r.p99, 1),
      fmt(r.processUsPerOp, 0),
      fmt(r.backendsUsPerOp, 0),
      fmt(r.pgSharedSeconds, 2),
      r.loadgenBusy > 0
        ? `${fmt(r.loadgenSeconds, 2)} (${fmt(r.loadgenBusy * 100, 0)}%)`
        : fmt(r.loadgenSeconds, 2),
      fmt(r.peakRssMB, 1),
    ]),
  );
}

/**
 * The targets table.
 *
 * @example
 * console.log(targetTable(targets));
 */
export function targetTable(targets: readonly TargetResult[]): string {
  return table(
    ["target", "measured", "goal", "verdict", "per round"],
    targets.map((t) => [
      `${t.id} ${t.what}`,
      t.measured,
      t.goal,
      t.verdict,
      t.perRound ? t.perRound.map((x) => x.toFixed(2)).join(" ") : "",
    ]),
  );
}
