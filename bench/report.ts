// The summary of a run: one row per contender (medians over its valid rounds), the targets with a verdict
// each, and the same as JSON for notes.
import type { RunResult } from "./contenders/types.js";
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
  floor: "floor: HMAC + batched claim",
  unique: "hookledger serve: unique",
  duplicate: "hookledger serve: duplicate storm",
  graphile: "graphile-worker c10",
  worker: "hookledger worker c10",
  uniquePgbouncer: "hookledger serve via PgBouncer: unique",
  workerPgbouncer: "hookledger worker c10 via PgBouncer",
  workerAdvance: "hookledger worker c10 + advance",
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
