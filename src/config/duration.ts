const UNITS: Readonly<Record<string, number>> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/**
 * A duration written as a whole number and a unit (`s`, `m`, `h`, `d`, `w`) in milliseconds, or `undefined` when
 * the text is not one.
 *
 * @example
 * durationMs("90m"); // 5_400_000
 */
export function durationMs(text: string): number | undefined {
  const match = /^(\d{1,6})([smhdw])$/.exec(text.trim());
  const ms = match ? Number(match[1]) * (UNITS[match[2] ?? ""] ?? 0) : 0;
  return ms > 0 ? ms : undefined;
}

/**
 * The one reading of `--since`/`--until` values: a duration back from `now` (`90m`, `24h`, `7d`) or an ISO 8601
 * date or time (`2024-05-01`, a date alone being midnight UTC, or `2024-05-01T12:00:00Z`). `undefined` when the
 * text is neither; the caller names the flag and {@link TIME_FORMS}.
 *
 * @example
 * pointInTime("24h", Date.now()); // a Date 24 hours ago
 * pointInTime("2024-05-01", Date.now()); // 2024-05-01T00:00:00.000Z
 */
export function pointInTime(text: string, now: number): Date | undefined {
  const back = durationMs(text);
  if (back !== undefined) return new Date(now - back);
  const ms = /^\d{4}-\d\d-\d\d/.test(text.trim()) ? Date.parse(text.trim()) : Number.NaN;
  return Number.isNaN(ms) ? undefined : new Date(ms);
}
