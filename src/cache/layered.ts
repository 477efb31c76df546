import type { SeenCache } from "../edge/observer.js";

/**
 * A {@link SeenCache} made of others, asked in order.
 *
 * @example
 * const seen: LayeredSeenCache = layeredSeenCache(memorySeenCache(), redis);
 * process.on("SIGTERM", () => seen.close());
 */
export interface LayeredSeenCache extends SeenCache {
  /** Closes every layer that can be closed (a Redis connection). */
  close(): Promise<void>;
}

/**
 * Layers caches, fastest first (memory, then Redis): `has` asks each in turn and copies a hit into the layers
 * before it; `add` records in all. A layer that fails is skipped; if none answered yes and one failed, `has`
 * rethrows its error, which the receiver logs and treats as a miss (Postgres answers).
 *
 * @example
 * const seen = layeredSeenCache(memorySeenCache(), redisSeenCache({ url: process.env.REDIS_URL!, schema: "hookledger" }));
 */
export function layeredSeenCache(...layers: readonly SeenCache[]): LayeredSeenCache {
  return {
    async has(source, dedupeKey) {
      let failure: unknown;
      for (const [i, layer] of layers.entries()) {
        let hit = false;
        try {
          hit = await layer.has(source, dedupeKey);
        } catch (error) {
          failure ??= error;
          continue;
        }
        if (hit) {
          for (const earlier of layers.slice(0, i)) addQuietly(earlier, source, dedupeKey);
          return true;
        }
      }
      if (failure !== undefined) throw failure;
      return false;
    },
    add(source, dedupeKey) {
      for (const layer of layers) addQuietly(layer, source, dedupeKey);
    },
    async close() {
      await Promise.all(
        layers.map((layer) => (layer as Partial<LayeredSeenCache>).close?.call(layer) ?? Promise.resolve()),
      );
    },
  };
}

function addQuietly(layer: SeenCache, source: string, dedupeKey: string): void {
  try {
    layer.add(source, dedupeKey);
  } catch {
    // add() must not throw (SeenCache's contract); one that does only loses a short-circuit.
  }
}
