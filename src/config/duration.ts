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
