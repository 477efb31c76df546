import type { RecalledEvent } from "./admit.js";

/**
 * Bodies a receiver has answered as duplicates, by source and sha256, with the event each carries.
 *
 * @example
 * const bodies: KnownBodies = knownBodies();
 * bodies.add("stripe", sha, { dedupeKey: "evt_1", type: "invoice.paid" });
 */
export interface KnownBodies {
  /** The event a body carries, if it is held. */
  get(source: string, bodySha256: string): RecalledEvent | undefined;
  /** Holds a body's event; see {@link knownBodies} for what happens when the source's bodies are full. */
  add(source: string, bodySha256: string, event: RecalledEvent): void;
}

/** Options of {@link knownBodies}. */
export interface KnownBodiesOptions {
  /** Bodies held per source. @defaultValue 50_000 */
  readonly max?: number;
  /** A body is held at least this long before a newer one may take its place. @defaultValue 60_000 */
  readonly minHoldMs?: number;
  /** A monotonic clock in milliseconds. @defaultValue performance.now */
  readonly now?: () => number;
}

interface Held {
  readonly event: RecalledEvent;
  readonly at: number;
}

/**
 * For providers whose event comes from the signed body alone (`Provider.steps`), the bodies of recent duplicates:
 * in a retry storm the same bytes come back again and again, and knowing the event a body carries spares parsing
 * it (JSON decoding was 22 of 35 µs of CPU per cached duplicate of a 2 KB Stripe body, measured in-process). Only
 * duplicates are held, so an event that never repeats costs nothing here; about 250 bytes each, `max` per source.
 *
 * When a source's bodies are full, the oldest goes only once it was held `minHoldMs`; until then a new body is not
 * held. A storm cycling over more distinct bodies than `max` keeps `max` of them known, where dropping the oldest
 * on every add (first in, first out) would have dropped each body just before it came back and known none.
 *
 * @example
 * const bodies = knownBodies({ max: 10_000 });
 */
export function knownBodies(options: KnownBodiesOptions = {}): KnownBodies {
  const max = options.max ?? 50_000;
  const minHoldMs = options.minHoldMs ?? 60_000;
  const now = options.now ?? (() => performance.now());
  // source → body sha256 → event (a Map iterates in insertion order: the first entry is the oldest)
  const bySource = new Map<string, Map<string, Held>>();
  return {
    get: (source, bodySha256) => bySource.get(source)?.get(bodySha256)?.event,
    add(source, bodySha256, event) {
      let bodies = bySource.get(source);
      if (!bodies) {
        bodies = new Map();
        bySource.set(source, bodies);
      }
      if (bodies.has(bodySha256)) return;
      const at = now();
      if (bodies.size >= max) {
        const oldest = bodies.entries().next();
        if (oldest.done || at - oldest.value[1].at < minHoldMs) return;
        bodies.delete(oldest.value[0]);
      }
      bodies.set(bodySha256, { event, at });
    },
  };
}
