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
  /** Holds a body's event; past `max` for the source, the body held longest goes. */
  add(source: string, bodySha256: string, event: RecalledEvent): void;
}

/**
 * For providers whose event comes from the signed body alone (`Provider.steps`), the bodies of recent duplicates:
 * in a retry storm the same bytes come back again and again, and knowing the event a body carries spares parsing
 * it (JSON decoding is about a quarter of the CPU of a cached duplicate). Only duplicates are held, so an event
 * that never repeats costs nothing here; `max` bodies per source (oldest first out, a hit does not refresh) bound
 * the memory to about 250 bytes each.
 *
 * @example
 * const bodies = knownBodies(10_000);
 */
export function knownBodies(max = 10_000): KnownBodies {
  // source → body sha256 → event
  const bySource = new Map<string, Map<string, RecalledEvent>>();
  return {
    get: (source, bodySha256) => bySource.get(source)?.get(bodySha256),
    add(source, bodySha256, event) {
      let bodies = bySource.get(source);
      if (!bodies) {
        bodies = new Map();
        bySource.set(source, bodies);
      }
      if (bodies.has(bodySha256)) return;
      bodies.set(bodySha256, event);
      if (bodies.size > max) {
        const oldest = bodies.keys().next();
        if (!oldest.done) bodies.delete(oldest.value);
      }
    },
  };
}
