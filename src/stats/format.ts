import type { SourceLedgerStats } from "./ledger.js";
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
  ["503s", (s) => String(s.unavailable)],
];

const LEDGER_COLUMNS: readonly [string, (s: SourceLedgerStats) => string][] = [
  ["backlog", (s) => String(s.backlog)],
  ["oldest pending", (s) => formatSeconds(s.oldestPendingSeconds)],
  ["failed", (s) => String(s.failed)],
  ["dead", (s) => String(s.dead)],
  ["settle p50", (s) => formatSeconds(s.settleP50Seconds)],
  ["settle p99", (s) => formatSeconds(s.settleP99Seconds)],
];

/**
 * Renders delivery statistics as a plain-text table, one row per source: the source left-aligned, the numbers
 * right-aligned under their headers. With `ledger` (from `readLedgerStats`), a second table follows: backlog and
 * oldest pending age now, failed and dead events and the time from receipt to settle of the window's events.
 *
 * @example
 * process.stdout.write(formatStatsTable(await readDeliveryStats(pool, ledger, { windowMs }), "24h"));
 */
export function formatStatsTable(
  stats: DeliveryStats,
  window: string,
  ledger?: readonly SourceLedgerStats[],
): string {
  const since = `${stats.since.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const title = `deliveries since ${since} (last ${window})\n`;
  const deliveries =
    stats.sources.length === 0
      ? `${title}no deliveries recorded in this window (receivers and inline guards record them through createStatsObserver)\n`
      : `${title}\n${table(
          ["source", ...COLUMNS.map(([name]) => name)],
          stats.sources.map((s) => [s.source, ...COLUMNS.map(([, value]) => value(s))]),
        )}`;
  if (ledger === undefined) return deliveries;
  const heading =
    "\nledger: backlog now; failed, dead and time to settle of the events received in the window\n";
  if (ledger.length === 0) return `${deliveries}${heading}no backlog and no events received in this window\n`;
  return `${deliveries}${heading}\n${table(
    ["source", ...LEDGER_COLUMNS.map(([name]) => name)],
    ledger.map((s) => [s.source, ...LEDGER_COLUMNS.map(([, value]) => value(s))]),
  )}`;
}

function table(header: string[], body: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${[line(header), ...body.map(line)].join("\n")}\n`;
}

/**
 * A duration for a table cell: milliseconds under a second, then seconds, minutes, hours and days; `-` for none.
 *
 * @example
 * formatSeconds(7_503); // "2h 05m"
 */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null) return "-";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const two = (n: number) => String(Math.floor(n)).padStart(2, "0");
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${two(seconds % 60)}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ${two((seconds % 3600) / 60)}m`;
  return `${Math.floor(seconds / 86_400)}d ${two((seconds % 86_400) / 3600)}h`;
}

/**
 * The statistics as JSON for scripts: the window's start, its length as given, and the numbers per source
 * (`duplicateRate` in percent, two decimals); with `ledger`, an `events` array beside `sources` holds the
 * `readLedgerStats` numbers per source (durations in seconds, three decimals; `null` when there is nothing to
 * measure).
 *
 * @example
 * JSON.parse(formatStatsJson(stats, "24h")).sources[0].duplicateRate; // 16.67
 */
export function formatStatsJson(
  stats: DeliveryStats,
  window: string,
  ledger?: readonly SourceLedgerStats[],
): string {
  const sources = stats.sources.map((s) => ({
    ...s,
    duplicateRate: Math.round(s.duplicateRate * 100) / 100,
  }));
  const round = (n: number | null) => (n === null ? null : Math.round(n * 1000) / 1000);
  const events = ledger?.map((s) => ({
    ...s,
    oldestPendingSeconds: round(s.oldestPendingSeconds),
    settleP50Seconds: round(s.settleP50Seconds),
    settleP99Seconds: round(s.settleP99Seconds),
  }));
  const out = { since: stats.since.toISOString(), window, sources, ...(events && { events }) };
  return `${JSON.stringify(out, null, 2)}\n`;
}
