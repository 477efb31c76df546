import type { RecalledEvent } from "./admit.js";
import { removeSlot, type SlotIndex, slotIndex } from "./slot-index.js";

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

const HASH_BYTES = 32;
const HEX = /^[0-9a-f]{64}$/;

// One source's bodies: a ring in arrival order (`next` is the oldest once full) and its index.
interface Ring {
  readonly hashes: Uint8Array;
  readonly at: Float64Array;
  readonly events: (RecalledEvent | undefined)[];
  readonly index: SlotIndex;
  readonly hashAt: (slot: number) => number;
  used: number;
  next: number;
}

/**
 * For providers whose event comes from the signed body alone (`Provider.steps`), the bodies of recent duplicates:
 * in a retry storm the same bytes come back again and again, and knowing the event a body carries spares parsing
 * it (JSON decoding was 22 of 35 µs of CPU per cached duplicate of a 2 KB Stripe body, measured in-process). Only
 * duplicates are held, so an event that never repeats costs nothing here; about 130 bytes each, `max` per source:
 * hashes, times and the index in typed arrays, the events in one array (as a `Map` keyed by hex strings they took
 * ~250 bytes each, all on the heap the garbage collector walks: docs/benchmarks.md#memory). A hash that is not 64
 * lowercase hex digits is never held.
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
  const bySource = new Map<string, Ring>();
  const scratch = Buffer.alloc(HASH_BYTES);

  // A sha256 needs no further hashing: its first four bytes are the index's hash.
  const word = (bytes: Uint8Array, at: number) =>
    (bytes[at] as number) |
    ((bytes[at + 1] as number) << 8) |
    ((bytes[at + 2] as number) << 16) |
    ((bytes[at + 3] as number) << 24);
  const same = (ring: Ring, slot: number) => {
    const at = slot * HASH_BYTES;
    for (let i = 0; i < HASH_BYTES; i++) if (ring.hashes[at + i] !== scratch[i]) return false;
    return true;
  };
  // The index cell of the hash in `scratch`, or the empty cell where it would go, as -(cell + 1).
  const find = (ring: Ring): number => {
    const { cells, mask } = ring.index;
    for (let cell = word(scratch, 0) & mask; ; cell = (cell + 1) & mask) {
      const slot = cells[cell] as number;
      if (slot === -1) return -(cell + 1);
      if (same(ring, slot)) return cell;
    }
  };
  const load = (bodySha256: string) =>
    HEX.test(bodySha256) && scratch.write(bodySha256, "hex") === HASH_BYTES;

  return {
    get(source, bodySha256) {
      const ring = bySource.get(source);
      if (!ring || !load(bodySha256)) return undefined;
      const cell = find(ring);
      return cell < 0 ? undefined : ring.events[ring.index.cells[cell] as number];
    },
    add(source, bodySha256, event) {
      if (!load(bodySha256)) return;
      let ring = bySource.get(source);
      if (!ring) {
        const hashes = new Uint8Array(max * HASH_BYTES);
        ring = {
          hashes,
          at: new Float64Array(max),
          events: new Array<RecalledEvent | undefined>(max).fill(undefined),
          index: slotIndex(max),
          hashAt: (slot) => word(hashes, slot * HASH_BYTES),
          used: 0,
          next: 0,
        };
        bySource.set(source, ring);
      }
      if (find(ring) >= 0) return;
      const at = now();
      let slot: number;
      if (ring.used < max) {
        slot = ring.used++;
      } else {
        slot = ring.next;
        if (at - (ring.at[slot] as number) < minHoldMs) return;
        removeSlot(ring.index, slot, ring.hashAt);
        ring.next = (slot + 1) % max;
      }
      ring.hashes.set(scratch, slot * HASH_BYTES);
      ring.at[slot] = at;
      ring.events[slot] = event;
      ring.index.cells[-find(ring) - 1] = slot;
    },
  };
}
