import type { SeenCache } from "../edge/observer.js";

/**
 * A {@link SeenCache} made of others, asked in order.
 *
 * @example
 * const seen: LayeredSeenCache = layeredSeenCache(memorySeenCache(), redis);
 * process.on("SIGTERM", () => seen.close());
 */
export interface LayeredSeenCache extends SeenCache {
  /** Whether any layer knows the id (as {@link SeenCache.get}, copying a hit into the earlier layers). */
  has(source: string, dedupeKey: string): Promise<boolean>;
  /** Closes every layer that can be closed (a Redis connection). */
  close(): Promise<void>;
}

/**
 * Layers caches, fastest first (memory, then Redis): `get` asks each in turn and copies a hit into the layers
 * before it; `peek` is the first layer's, when it has one; `add` records in all. A layer that fails is skipped; if none knew the id and one failed, `get`
 * rethrows its error, which the receiver logs and treats as a miss (Postgres answers).
 *
 * @example
 * const seen = layeredSeenCache(memorySeenCache(), redisSeenCache({ url: process.env.REDIS_URL!, schema: "hookledger" }));
 */
export function layeredSeenCache(...layers: readonly SeenCache[]): LayeredSeenCache {
  const get = async (source: string, dedupeKey: string): Promise<string | undefined> => {
    let failure: unknown;
    for (const [i, layer] of layers.entries()) {
      let hit: string | undefined;
      try {
        hit = await layer.get(source, dedupeKey);
      } catch (error) {
        failure ??= error;
        continue;
      }
      if (hit !== undefined) {
        for (const earlier of layers.slice(0, i)) addQuietly(earlier, source, dedupeKey, hit);
        return hit;
      }
    }
    if (failure !== undefined) throw failure;
    return undefined;
  };
  // Only the first layer is asked: a later layer's hit must also be copied forward, which `get` does.
  const first = layers[0];
  const peek = first?.peek?.bind(first);
  return {
    get,
    ...(peek && { peek }),
    has: async (source, dedupeKey) => (await get(source, dedupeKey)) !== undefined,
    add(source, dedupeKey, bodySha256) {
      for (const layer of layers) addQuietly(layer, source, dedupeKey, bodySha256);
    },
    async close() {
      await Promise.all(
        layers.map((layer) => (layer as Partial<LayeredSeenCache>).close?.call(layer) ?? Promise.resolve()),
      );
    },
  };
}

function addQuietly(layer: SeenCache, source: string, dedupeKey: string, bodySha256: string): void {
  try {
    layer.add(source, dedupeKey, bodySha256);
  } catch {
    // add() must not throw (SeenCache's contract); one that does only loses a short-circuit.
  }
}
