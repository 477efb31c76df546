import type { EventDetail, EventSummary } from "../../ledger/inspect.js";
import type { Tombstone } from "../../ledger/tombstone.js";
import { eventId } from "./args.js";

/**
 * A timestamp as the tables print it: UTC, to the second.
 *
 * @example
 * utc(new Date("2024-05-01T12:00:03.250Z")); // "2024-05-01 12:00:03"
 */
export function utc(date: Date | null): string {
  return date === null ? "-" : date.toISOString().slice(0, 19).replace("T", " ");
}

function oneLine(text: string | null, max: number): string {
  if (text === null) return "";
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function statusCell(e: EventSummary): string {
  return e.outcome === null ? e.status : `${e.status}/${e.outcome}`;
}

/**
 * The `events list` table: one line per event, newest first, the last error cut to one short line.
 *
 * @example
 * io.out(formatEventTable(await listEvents(pool, ledger, filter)));
 */
export function formatEventTable(events: readonly EventSummary[]): string {
  const header = ["id", "type", "status", "attempts", "received (UTC)", "settled (UTC)", "last error"];
  const rows = events.map((e) => [
    eventId(e),
    e.type,
    statusCell(e),
    String(e.attempts),
    utc(e.receivedAt),
    utc(e.settledAt),
    oneLine(e.lastError, 60),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 3 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join("\n")}\n`;
}

/**
 * An event summary for JSON output: the id first, dates as ISO strings.
 *
 * @example
 * io.out(`${JSON.stringify(events.map(eventJson), null, 2)}\n`);
 */
export function eventJson<T extends EventSummary>(e: T): { id: string } & T {
  return { id: eventId(e), ...e };
}

/**
 * The `events show` page: the row's lifecycle, its duplicates, the kept headers and the payload pretty-printed.
 *
 * @example
 * io.out(formatEventDetail(event));
 */
export function formatEventDetail(e: EventDetail): string {
  const fields: [string, string][] = [
    ["type", e.type],
    ["status", statusCell(e)],
    ["attempts", String(e.attempts)],
  ];
  if (e.status === "pending" || e.status === "failed")
    fields.push(["next attempt", `${utc(e.nextAttemptAt)} UTC`]);
  if (e.lastError !== null) fields.push(["last error", e.lastError.replace(/\n/g, "\n                ")]);
  fields.push(
    ["received", `${utc(e.receivedAt)} UTC`],
    ["settled", e.settledAt === null ? "-" : `${utc(e.settledAt)} UTC`],
    ["occurred", e.occurredAt === null ? "-" : `${utc(e.occurredAt)} UTC`],
    ["arrived via", e.arrivedVia],
  );
  if (e.entity) {
    fields.push([
      "entity",
      `${e.entity.type} ${e.entity.id}${e.entity.version ? ` @ ${e.entity.version}` : ""}`,
    ]);
  }
  const mismatches = e.bodyMismatches > 0 ? `, ${e.bodyMismatches} with a different body` : "";
  const last = e.lastDuplicateAt ? ` (last ${utc(e.lastDuplicateAt)} UTC)` : "";
  fields.push(
    ["duplicates", `${e.duplicates}${mismatches}${last}`],
    ["body", `${e.bodyBytes} bytes, sha256 ${e.bodySha256}`],
  );
  const headerLines = Object.entries(e.headers)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `  ${name}: ${value}`);
  return [
    eventId(e),
    ...fields.map(([name, value]) => `  ${name.padEnd(14)}${value}`),
    "",
    "headers",
    ...(headerLines.length > 0 ? headerLines : ["  (none kept)"]),
    "",
    "payload",
    JSON.stringify(e.payload, null, 2),
    "",
  ].join("\n");
}

/**
 * `events show` of a pruned event: what its tombstone still says, and why it is kept.
 *
 * @example
 * io.out(formatTombstone(await getTombstone(pool, ledger, "stripe", "evt_1")));
 */
export function formatTombstone(t: Tombstone): string {
  return `${eventId(t)}: pruned on ${utc(t.prunedAt)} UTC; a tombstone keeps the key so a late delivery is answered as a duplicate
  received  ${utc(t.receivedAt)} UTC
  The payload, headers and attempts went with the row; \`hookledger prune --tombstones-older-than\` decides how
  long the key itself is kept.
`;
}

/**
 * `events show --json` of a pruned event.
 *
 * @example
 * io.out(JSON.stringify(tombstoneJson(tombstone)));
 */
export function tombstoneJson(t: Tombstone): Record<string, unknown> {
  return {
    id: eventId(t),
    source: t.source,
    dedupeKey: t.dedupeKey,
    status: "pruned",
    receivedAt: t.receivedAt.toISOString(),
    prunedAt: t.prunedAt.toISOString(),
  };
}
