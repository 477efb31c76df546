import type { Logger } from "../log.js";
import type { SeenCache } from "./observer.js";

// The receiver's questions to the confirmed-duplicate cache. The cache only short-circuits answers Postgres already
// gave: when it fails, the failure is logged and Postgres answers.

/**
 * What the cache's memory layer knows now (`SeenCache.peek`); a cache without one, or one that fails, is a miss.
 *
 * @example
 * peekQuietly(seen, "stripe", "evt_1", log); // "9f86d0…" or undefined
 */
export function peekQuietly(seen: SeenCache, source: string, key: string, log: Logger): string | undefined {
  try {
    return seen.peek?.(source, key);
  } catch (error) {
    cacheFailed(log, source, key, error);
    return undefined;
  }
}

/**
 * The stored body's hash for an event id: the memory layer's answer at once when it has one (no promise per cached
 * duplicate), else the cache's `get`; `undefined` without a cache, on a miss or when the cache fails.
 *
 * @example
 * const lookup = cachedBodyHash(seen, "stripe", "evt_1", log);
 * const known = typeof lookup === "string" ? lookup : await lookup;
 */
export function cachedBodyHash(
  seen: SeenCache | undefined,
  source: string,
  key: string,
  log: Logger,
): string | Promise<string | undefined> | undefined {
  if (!seen) return undefined;
  try {
    const known = seen.peek?.(source, key);
    if (known !== undefined) return known;
    return seen.get(source, key).catch((error: unknown) => {
      cacheFailed(log, source, key, error);
      return undefined;
    });
  } catch (error) {
    cacheFailed(log, source, key, error);
    return undefined;
  }
}

function cacheFailed(log: Logger, source: string, key: string, error: unknown): void {
  log.warn({ source, eventId: key, err: (error as Error).message }, "duplicate cache unavailable");
}
