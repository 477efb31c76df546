import type { Redis } from "ioredis";
import type { SeenCache } from "../edge/observer.js";
import type { Logger } from "../log.js";
import { importOptional } from "../optional.js";

/**
 * Options of {@link redisSeenCache}.
 *
 * @example
 * const options: RedisSeenCacheOptions = { url: "redis://cache:6379/0", schema: "hookledger", ttlSeconds: 86_400 };
 */
export interface RedisSeenCacheOptions {
  /** @example "redis://127.0.0.1:6379/0" */
  readonly url: string;
  /** The ledger's schema; part of every key, so ledgers sharing one Redis never meet. */
  readonly schema: string;
  /**
   * Tells apart ledgers that share a schema name over time: the service passes the schema's oid, so a ledger
   * dropped and created again never inherits the old one's keys (which would answer "duplicate" for new events).
   */
  readonly ledgerId?: string;
  /**
   * How long an id stays known. Providers stop retrying well within it (Stripe: 3 days, Shopify: 48 h, Standard
   * Webhooks senders: about a day); a later copy is answered by Postgres, correctly, only slower.
   * @defaultValue 604_800 (7 days)
   */
  readonly ttlSeconds?: number;
  /** @defaultValue "hookledger:seen:" */
  readonly keyPrefix?: string;
  /**
   * A command not answered by then fails (a miss: Postgres answers).
   * @defaultValue 250
   */
  readonly commandTimeoutMs?: number;
  /** Where losing and regaining the connection is reported (once per change). */
  readonly log?: Logger;
}

/**
 * A {@link SeenCache} in Redis, shared by every receiver.
 *
 * @example
 * const redis: RedisSeenCache = redisSeenCache({ url, schema: "hookledger" });
 * await redis.connect(); // optional: otherwise at the first lookup
 */
export interface RedisSeenCache extends SeenCache {
  /** Whether the id is known (with a body hash). */
  has(source: string, dedupeKey: string): Promise<boolean>;
  /** The Redis key of an event id. */
  keyOf(source: string, dedupeKey: string): string;
  /**
   * Connects now instead of at first use; resolves once ready, rejects when Redis cannot be reached (or with a
   * `MissingPackageError` when the `ioredis` package is not installed).
   */
  connect(): Promise<void>;
  /** Closes the connection. */
  close(): Promise<void>;
}

/**
 * The shared confirmed-duplicate cache: `SET key <hex sha256 of the stored body> EX ttl` after a claim committed,
 * `GET key` before a claim (a value that is not a sha256, such as the `1` of earlier releases, is a miss).
 * Redis is never needed for a correct answer: while it is unreachable (the client connects lazily and reconnects
 * in the background; commands are never queued offline) every lookup is a miss without waiting, a slow command
 * fails after `commandTimeoutMs`, and a flushed or evicted key only sends that delivery to Postgres. The client,
 * from the optional `ioredis` package, loads in the background when the cache is created; until it has (or when
 * the package is not installed, which is logged as an error naming `npm install ioredis`) every lookup is a miss.
 * Keys: `{keyPrefix}{schema}[@{ledgerId}]:{source, URI-encoded}:{dedupe key}`.
 *
 * @example
 * const seen = redisSeenCache({ url: process.env.REDIS_URL!, schema: "hookledger", log });
 */
export function redisSeenCache(options: RedisSeenCacheOptions): RedisSeenCache {
  const ttlSeconds = options.ttlSeconds ?? 604_800;
  const prefix = `${options.keyPrefix ?? "hookledger:seen:"}${options.schema}${
    options.ledgerId === undefined ? "" : `@${options.ledgerId}`
  }:`;
  const where = redactedUrl(options.url);
  let redis: Redis | undefined;
  let healthy: boolean | undefined;
  const loaded = importOptional("ioredis", () => import("ioredis"), {
    feature: "the Redis duplicate cache (REDIS_URL)",
  }).then(({ Redis }) => {
    const client = new Redis(options.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 250,
      connectTimeout: 1000,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    });
    client.on("ready", () => {
      if (healthy !== true) options.log?.info({ redis: where }, "Redis duplicate cache connected");
      healthy = true;
    });
    // Without a listener ioredis prints every reconnection failure; this reports each outage once.
    client.on("error", (error: Error) => {
      if (healthy !== false) {
        options.log?.warn(
          { redis: where, err: error.message },
          "Redis duplicate cache unavailable; Postgres answers every delivery",
        );
      }
      healthy = false;
    });
    redis = client;
    return client;
  });
  loaded.catch((error: Error) =>
    options.log?.error({ redis: where }, `${error.message}; meanwhile Postgres answers every delivery`),
  );
  const ready = (): boolean => {
    if (redis?.status === "wait") redis.connect().catch(() => {});
    return redis?.status === "ready";
  };
  const keyOf = (source: string, dedupeKey: string) => `${prefix}${encodeURIComponent(source)}:${dedupeKey}`;

  const get = async (source: string, dedupeKey: string): Promise<string | undefined> => {
    if (!ready() || !redis) return undefined;
    const value = await redis.get(keyOf(source, dedupeKey));
    return value !== null && SHA256_HEX.test(value) ? value : undefined;
  };

  return {
    keyOf,
    get,
    has: async (source, dedupeKey) => (await get(source, dedupeKey)) !== undefined,
    add(source, dedupeKey, bodySha256) {
      if (!ready() || !redis) return;
      redis.set(keyOf(source, dedupeKey), bodySha256, "EX", ttlSeconds).catch((error: Error) => {
        options.log?.warn(
          { source, eventId: dedupeKey, err: error.message },
          "Redis duplicate cache: SET failed",
        );
      });
    },
    async connect() {
      const redis = await loaded;
      if (redis.status === "ready") return;
      if (redis.status === "wait") {
        await redis.connect();
        return;
      }
      await new Promise<void>((resolve, reject) => {
        redis.once("ready", resolve);
        redis.once("error", reject);
      });
    },
    async close() {
      const redis = await loaded.catch(() => undefined);
      if (!redis) return;
      if (redis.status === "ready") {
        await redis.quit().catch(() => redis.disconnect());
      } else {
        redis.disconnect();
      }
    },
  };
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The URL without its password, for logs. */
function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparsable Redis URL)";
  }
}
