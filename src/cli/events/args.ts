import type { EventKey } from "../../ledger/retry.js";
import { CliError } from "../errors.js";

/**
 * Checks a flag's value against the allowed ones; a usage error names the flag, the value and every allowed value.
 *
 * @example
 * const status = oneOf("--status", "dead", ["dead", "failed"] as const); // "dead"
 */
export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new CliError(`${flag} '${value}' is not one of ${allowed.join(", ")}`, 2);
}

/**
 * Parses a positive whole number flag, at most `max`.
 *
 * @example
 * parseCount("--limit", "200", 10_000); // 200
 */
export function parseCount(flag: string, text: string, max: number): number {
  const n = /^\d{1,9}$/.test(text) ? Number(text) : 0;
  if (n < 1 || n > max) throw new CliError(`${flag} '${text}' is not a whole number from 1 to ${max}`, 2);
  return n;
}

/**
 * Reads event ids: each `source/dedupe_key` (split at the first `/`, so a dedupe key may contain one), or, with
 * `--source`, each a dedupe key of that source.
 *
 * @example
 * parseIds(["stripe/evt_1"], undefined); // [{ source: "stripe", dedupeKey: "evt_1" }]
 * parseIds(["evt_1", "evt_2"], "stripe");
 */
export function parseIds(positionals: readonly string[], source: string | undefined): EventKey[] {
  return positionals.map((id) => {
    if (source !== undefined) return { source, dedupeKey: id };
    const slash = id.indexOf("/");
    if (slash <= 0 || slash === id.length - 1) {
      throw new CliError(
        `'${id}' is not an event id; give source/dedupe_key (e.g. stripe/evt_1), or --source stripe evt_1`,
        2,
      );
    }
    return { source: id.slice(0, slash), dedupeKey: id.slice(slash + 1) };
  });
}

/**
 * An event's id as the commands print and accept it.
 *
 * @example
 * eventId({ source: "stripe", dedupeKey: "evt_1" }); // "stripe/evt_1"
 */
export function eventId(key: EventKey): string {
  return `${key.source}/${key.dedupeKey}`;
}
