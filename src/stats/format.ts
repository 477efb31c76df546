import type { DeliveryStats, SourceStats } from "./query.js";

const COLUMNS: readonly [string, (s: SourceStats) => string][] = [
  ["deliveries", (s) => String(s.deliveries)],
  ["unique events", (s) => String(s.uniqueEvents)],
  ["duplicates", (s) => String(s.duplicates)],
  ["duplicate rate", (s) => `${s.duplicateRate.toFixed(1)}%`],
  ["would-skip", (s) => String(s.wouldSkip)],
  ["retries", (s) => String(s.retries)],
  ["body mismatches", (s) => String(s.bodyMismatches)],
  ["refused", (s) => String(s.refused)],
];

/**
 * Renders delivery statistics as a plain-text table, one row per source: the source left-aligned, the numbers
 * right-aligned under their headers.
 *
 * @example
 * process.stdout.write(formatStatsTable(await readDeliveryStats(pool, ledger, { windowMs }), "24h"));
 */
export function formatStatsTable(stats: DeliveryStats, window: string): string {
  const since = `${stats.since.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const title = `deliveries since ${since} (last ${window})\n`;
  if (stats.sources.length === 0) {
    return `${title}no deliveries recorded in this window (receivers and inline guards record them through createStatsObserver)\n`;
  }
  const header = ["source", ...COLUMNS.map(([name]) => name)];
  const body = stats.sources.map((s) => [s.source, ...COLUMNS.map(([, value]) => value(s))]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${title}\n${[line(header), ...body.map(line)].join("\n")}\n`;
}

/**
 * The statistics as JSON for scripts: the window's start, its length as given, and the numbers per source
 * (`duplicateRate` in percent, two decimals).
 *
 * @example
 * JSON.parse(formatStatsJson(stats, "24h")).sources[0].duplicateRate; // 16.67
 */
export function formatStatsJson(stats: DeliveryStats, window: string): string {
  const sources = stats.sources.map((s) => ({
    ...s,
    duplicateRate: Math.round(s.duplicateRate * 100) / 100,
  }));
  return `${JSON.stringify({ since: stats.since.toISOString(), window, sources }, null, 2)}\n`;
}
