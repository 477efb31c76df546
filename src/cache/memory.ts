import type { SeenCache } from "../edge/observer.js";

/**
 * Options of {@link memorySeenCache}.
 *
 * @example
 * memorySeenCache({ max: 50_000 });
 */
export interface MemorySeenCacheOptions {
  /**
   * Event ids kept; the least recently used go first. Each costs roughly 250 bytes plus its id (the body's hash included).
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

/**
 * The in-process confirmed-duplicate cache: a bounded LRU of event ids whose claim committed, each with its body's
 * sha256. A hand-written `Map` LRU (a `Map` iterates in insertion order, so re-inserting on use keeps the oldest
 * entry first): twenty lines against a dependency such as `lru-cache`, whose TTLs, sizes and disposers this cache
 * does not need.
 *
 * @example
 * const receiver = createReceiver({ ...options, seen: memorySeenCache({ max: 50_000 }) });
 */
export function memorySeenCache(options: MemorySeenCacheOptions = {}): MemorySeenCache {
  const max = options.max ?? 100_000;
  if (!Number.isInteger(max) || max < 1) throw new Error(`memorySeenCache: max must be a positive integer`);
  // key → hex sha256 of the stored body
  const ids = new Map<string, string>();
  // Source names cannot hold a NUL; the dedupe key comes last, so any key is unambiguous.
  const keyOf = (source: string, dedupeKey: string) => `${source}\0${dedupeKey}`;
  const cache: MemorySeenCache = {
    get size() {
      return ids.size;
    },
    async get(source, dedupeKey) {
      return cache.peek(source, dedupeKey);
    },
    peek(source, dedupeKey) {
      const key = keyOf(source, dedupeKey);
      const hash = ids.get(key);
      if (hash === undefined) return undefined;
      ids.delete(key);
      ids.set(key, hash);
      return hash;
    },
    async has(source, dedupeKey) {
      return cache.peek(source, dedupeKey) !== undefined;
    },
    add(source, dedupeKey, bodySha256) {
      const key = keyOf(source, dedupeKey);
      ids.delete(key);
      ids.set(key, bodySha256);
      if (ids.size > max) {
        const oldest = ids.keys().next();
        if (!oldest.done) ids.delete(oldest.value);
      }
    },
  };
  return cache;
}
