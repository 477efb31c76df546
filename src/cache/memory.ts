import type { SeenCache } from "../edge/observer.js";
import { removeSlot, slotIndex } from "../edge/slot-index.js";

/**
 * Options of {@link memorySeenCache}.
 *
 * @example
 * memorySeenCache({ max: 50_000 });
 */
export interface MemorySeenCacheOptions {
  /**
   * Event ids kept; when full, one not looked up for the longest while goes first. Each costs about 100 bytes (the
   * body's hash included), taken as the cache fills; ids longer than 48 bytes (UTF-8), or holding a character
   * outside the Basic Multilingual Plane or a lone surrogate, are not kept, so Postgres answers their duplicates.
   * @defaultValue 100_000
   */
  readonly max?: number;
}

/**
 * A {@link SeenCache} in this process's memory.
 *
 * @example
 * const seen: MemorySeenCache = memorySeenCache();
 * seen.size; // ids held now
 */
export interface MemorySeenCache extends Required<SeenCache> {
  /** Ids held now. */
  readonly size: number;
  /** Whether the id is held (and marks it recently used). */
  has(source: string, dedupeKey: string): Promise<boolean>;
}

// Every provider's ids fit: Stripe's evt_ ids are 28 bytes, GitHub's and Shopify's delivery GUIDs 36.
const MAX_KEY_BYTES = 48;

const HASH_BYTES = 32;
const HEX = /^[0-9a-f]{64}$/;
const SURROGATE = /[\ud800-\udfff]/;

/**
 * The in-process confirmed-duplicate cache: a bounded set of event ids whose claim committed, each with its body's
 * sha256, held in typed arrays (ids as UTF-8 bytes, hashes as 32 bytes, an open-addressing index), so a full cache
 * is a fixed ~10 MB that the garbage collector never walks or copies. When full, the CLOCK policy picks which id goes:
 * the hand passes over ids looked up since it last came by (clearing their mark) and evicts the first one that was
 * not, an approximation of least recently used that needs no reordering on a hit.
 *
 * Hand-written because a `Map` (or `lru-cache`, built on one) holds each entry as JS strings and objects: 100,000
 * ids took ~30 MB of the heap's 40 MB of live data in the bench's soak, and each id added and dropped under load
 * went through the old generation, which `serve`'s resident memory followed (docs/benchmarks.md#memory).
 *
 * @example
 * const receiver = createReceiver({ ...options, seen: memorySeenCache({ max: 50_000 }) });
 */
export function memorySeenCache(options: MemorySeenCacheOptions = {}): MemorySeenCache {
  const max = options.max ?? 100_000;
  if (!Number.isInteger(max) || max < 1) throw new Error(`memorySeenCache: max must be a positive integer`);
  const ids = new Uint8Array(max * MAX_KEY_BYTES);
  const idLengths = new Uint8Array(max);
  const sourceOf = new Uint16Array(max);
  const hashOf = new Uint32Array(max);
  const bodies = new Uint8Array(max * HASH_BYTES);
  const looked = new Uint8Array(max);
  const index = slotIndex(max);
  const { cells, mask } = index;
  const sources = new Map<string, number>();
  const scratch = new Uint8Array(MAX_KEY_BYTES);
  const encoder = new TextEncoder();
  let used = 0;
  let hand = 0;

  // The id's length in `scratch`, or -1 when it is longer than MAX_KEY_BYTES or holds a surrogate: UTF-8 encoding
  // turns every lone surrogate into U+FFFD, which would make two ids one.
  const encode = (dedupeKey: string): number => {
    if (SURROGATE.test(dedupeKey)) return -1;
    const { read, written } = encoder.encodeInto(dedupeKey, scratch);
    return read === dedupeKey.length ? written : -1;
  };
  // FNV-1a over the id's bytes, seeded with the source's number.
  const hash = (source: number, length: number): number => {
    let h = (0x811c9dc5 ^ source) >>> 0;
    for (let i = 0; i < length; i++) h = Math.imul(h ^ (scratch[i] as number), 0x01000193);
    return h >>> 0;
  };
  const same = (slot: number, source: number, length: number, h: number): boolean => {
    if (hashOf[slot] !== h || sourceOf[slot] !== source || idLengths[slot] !== length) return false;
    const at = slot * MAX_KEY_BYTES;
    for (let i = 0; i < length; i++) if (ids[at + i] !== scratch[i]) return false;
    return true;
  };
  // The index cell of the id in `scratch`, or the empty cell where it would go, as -(cell + 1).
  const find = (source: number, length: number, h: number): number => {
    for (let cell = h & mask; ; cell = (cell + 1) & mask) {
      const slot = cells[cell] as number;
      if (slot === -1) return -(cell + 1);
      if (same(slot, source, length, h)) return cell;
    }
  };
  const hashAt = (slot: number) => hashOf[slot] as number;
  const lookup = (source: string, dedupeKey: string): number => {
    const s = sources.get(source);
    const length = s === undefined ? -1 : encode(dedupeKey);
    if (s === undefined || length < 0) return -1;
    const cell = find(s, length, hash(s, length));
    return cell < 0 ? -1 : (cells[cell] as number);
  };

  const cache: MemorySeenCache = {
    get size() {
      return used;
    },
    async get(source, dedupeKey) {
      return cache.peek(source, dedupeKey);
    },
    peek(source, dedupeKey) {
      const slot = lookup(source, dedupeKey);
      if (slot < 0) return undefined;
      looked[slot] = 1;
      return Buffer.from(bodies.buffer, bodies.byteOffset + slot * HASH_BYTES, HASH_BYTES).toString("hex");
    },
    async has(source, dedupeKey) {
      return cache.peek(source, dedupeKey) !== undefined;
    },
    add(source, dedupeKey, bodySha256) {
      if (!HEX.test(bodySha256)) return;
      let s = sources.get(source);
      if (s === undefined) {
        if (sources.size > 0xffff) return;
        s = sources.size;
        sources.set(source, s);
      }
      const length = encode(dedupeKey);
      if (length < 0) return;
      const h = hash(s, length);
      const cell = find(s, length, h);
      let slot: number;
      if (cell >= 0) {
        slot = cells[cell] as number;
        looked[slot] = 1; // added again: as good as looked up
      } else {
        if (used < max) {
          slot = used++;
        } else {
          while (looked[hand] === 1) {
            looked[hand] = 0;
            hand = (hand + 1) % max;
          }
          slot = hand;
          hand = (hand + 1) % max;
          removeSlot(index, slot, hashAt);
        }
        cells[-find(s, length, h) - 1] = slot;
        ids.set(scratch.subarray(0, length), slot * MAX_KEY_BYTES);
        idLengths[slot] = length;
        sourceOf[slot] = s;
        hashOf[slot] = h;
        // A new id starts unmarked, where the hand just was: a full turn from eviction.
        looked[slot] = 0;
      }
      bodies.set(Buffer.from(bodySha256, "hex"), slot * HASH_BYTES);
    },
  };
  return cache;
}
