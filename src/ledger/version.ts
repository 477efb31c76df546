/**
 * What a date version counts in: `"s"` for Stripe, whose entity version is the event's `created` in seconds;
 * `"ms"` for the providers that version by a date (Shopify `updated_at`, Paddle `occurred_at`, Standard Webhooks
 * `timestamp`, generic and Awardee date fields), and for `ctx.advance(type, id, date)`.
 */
export type VersionUnit = "s" | "ms";

/** A version as `ctx.advance()` and the backfill take it: a number, a numeric string, a `Date` or an ISO 8601 date. */
export type VersionInput = number | bigint | string | Date;

/** A version encoded for the guard's `numeric` column, or why it cannot be. */
export type EncodedVersion =
  | { readonly ok: true; readonly version: string }
  | { readonly ok: false; readonly reason: "not_a_version" | "unit_missing" };

const NUMERIC = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Encodes a version the way the guard stores it: numbers and numeric strings as given (so `extract(epoch from …)`
 * stays in seconds, like Stripe's `created`), dates as a time in `unit`. Whole seconds are floored: Stripe's
 * `created` has one-second resolution and equal versions advance, so an event of the same second still applies.
 *
 * @example
 * encodeVersion(new Date("2024-01-01T00:00:00.500Z"), "s"); // { ok: true, version: "1704067200" }
 */
export function encodeVersion(value: unknown, unit: VersionUnit | undefined): EncodedVersion {
  if (typeof value === "number") {
    return Number.isFinite(value)
      ? { ok: true, version: String(value) }
      : { ok: false, reason: "not_a_version" };
  }
  if (typeof value === "bigint") return { ok: true, version: value.toString() };
  let ms: number;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === "string") {
    const text = value.trim();
    if (NUMERIC.test(text)) return { ok: true, version: text };
    // Date.parse alone would read "12" or "May" as dates; a version date must at least carry a full day.
    ms = /^\d{4}-\d\d-\d\d/.test(text) ? Date.parse(text) : Number.NaN;
  } else return { ok: false, reason: "not_a_version" };
  if (Number.isNaN(ms)) return { ok: false, reason: "not_a_version" };
  if (unit === undefined) return { ok: false, reason: "unit_missing" };
  return { ok: true, version: String(unit === "s" ? Math.floor(ms / 1000) : ms) };
}

/**
 * The unit a provider's default entity version counts dates in (see {@link VersionUnit}).
 *
 * @example
 * versionUnitOf("stripe"); // "s"
 */
export function versionUnitOf(provider: string): VersionUnit {
  return provider === "stripe" ? "s" : "ms";
}
