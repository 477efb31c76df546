// The shared confirmed-duplicate cache in a real Redis (database 15, flushed by these tests). Redis down, flushed or
// stalled never changes an answer: Postgres answers whatever Redis does not.
import assert from "node:assert/strict";
import { connect, createServer, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { Redis } from "ioredis";
import { layeredSeenCache } from "hookledger";
import { memorySeenCache } from "hookledger";
import { type RedisSeenCache, redisSeenCache } from "hookledger";
import { createPool, type Pool } from "hookledger";
import type { ReceiverOptions } from "hookledger";
import type { DeliveryReport } from "hookledger";
import { silentLogger } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { ledgerCounts, stripeBody } from "../helpers/http.js";
import { freePort } from "../helpers/net.js";
import { counting, postOnce } from "../helpers/cache.js";

const H1 = "b".repeat(64);
const REDIS_URL = process.env.HOOKLEDGER_TEST_REDIS_URL ?? "redis://127.0.0.1:6379/15";

async function probe(): Promise<string | false> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0 });
  let cause: Error | undefined;
  client.on("error", (error: Error) => {
    cause ??= error;
  });
  try {
    await client.connect();
    await client.ping();
    return false;
  } catch (error) {
    const why = (cause ?? (error as Error)).message;
    return `no Redis on ${REDIS_URL}: ${why} (start redis-server, or point HOOKLEDGER_TEST_REDIS_URL at one)`;
  } finally {
    client.disconnect();
  }
}
const skip = await probe();
if (skip) console.log(`# skipping the Redis cache tests: ${skip}`);

let t: TestLedger;
let ingest: Pool;
let admin: Redis;
const caches: RedisSeenCache[] = [];
const cache = (url = REDIS_URL, extra: { commandTimeoutMs?: number } = {}) => {
  const c = redisSeenCache({ url, schema: t.schema, log: silentLogger(), ...extra });
  caches.push(c);
  return c;
};

before(async () => {
  if (skip) return;
  t = await freshLedger();
  ingest = t.newPool("ingest");
  admin = new Redis(REDIS_URL);
  await admin.flushdb();
});
after(async () => {
  if (skip) return;
  await Promise.all(caches.map((c) => c.close()));
  admin.disconnect();
  await t.drop();
});

const post = (options: Partial<ReceiverOptions> & Pick<ReceiverOptions, "db">, id: string) =>
  postOnce(t.ledger, options, id);

const inRedis = (id: string) => admin.exists(`hookledger:seen:${t.schema}:stripe:${id}`);

test("redisSeenCache: another receiver answers a committed id's duplicate from Redis, without a database query", {
  skip,
}, async () => {
  const first = cache();
  // Lazy: until connected, lookups are misses and ids are not recorded (the service connects at start).
  await first.connect();
  assert.equal((await post({ db: ingest, seen: first }, "evt_shared")).body.status, "accepted");
  await waitFor("the id to reach Redis", async () => (await inRedis("evt_shared")) === 1, 5000);

  const second = cache();
  await second.connect();
  const db = counting(ingest);
  const reports: DeliveryReport[] = [];
  const reply = await post(
    { db, seen: second, observer: { delivery: (r) => reports.push(r) } },
    "evt_shared",
  );
  assert.deepEqual(reply.body, { status: "duplicate", id: "evt_shared" });
  assert.equal(db.count, 0, "the cached duplicate must not reach the database");
  assert.equal(reports[0]?.shortCircuit, true);
});

test("redisSeenCache: a same-id delivery with another body is an alarm on a warm cache too", {
  skip,
}, async () => {
  const first = cache();
  await first.connect();
  assert.equal((await post({ db: ingest, seen: first }, "evt_redis_mismatch")).body.status, "accepted");
  await waitFor("the id to reach Redis", async () => (await inRedis("evt_redis_mismatch")) === 1, 5000);
  const second = cache();
  await second.connect();
  const reports: DeliveryReport[] = [];
  const options = {
    db: ingest,
    seen: second,
    observer: { delivery: (r: DeliveryReport) => reports.push(r) },
  };
  assert.equal((await post(options, "evt_redis_mismatch")).body.status, "duplicate");
  assert.equal(reports.at(-1)?.shortCircuit, true, "the same body is answered from Redis");
  const other = stripeBody("evt_redis_mismatch", { type: "customer.subscription.deleted" });
  const reply = await postOnce(t.ledger, options, "evt_redis_mismatch", other);
  assert.deepEqual(reply.body, { status: "duplicate", id: "evt_redis_mismatch" });
  assert.equal(reports.at(-1)?.bodyMismatch, true, "the mismatch reaches the metrics and statistics");
  const { rows } = await t.pool.query<{ n: number }>(
    `select body_mismatches::int as n from ${t.ledger.s}.duplicates where dedupe_key = 'evt_redis_mismatch'`,
  );
  assert.equal(rows[0]?.n, 1, "and the ledger's duplicates.body_mismatches");
});

test("redisSeenCache keys hold prefix, schema, source and dedupe key, and expire after 7 days", {
  skip,
}, async () => {
  const key = `hookledger:seen:${t.schema}:stripe:evt_shared`;
  assert.equal(cache().keyOf("stripe", "evt_shared"), key);
  const ttl = await admin.ttl(key);
  assert.ok(ttl > 604_800 - 60 && ttl <= 604_800, `ttl ${ttl}`);
  const other = redisSeenCache({ url: REDIS_URL, schema: "s", ledgerId: "16384", keyPrefix: "app:" });
  caches.push(other);
  assert.equal(other.keyOf("shop/eu", "a:b"), "app:s@16384:shop%2Feu:a:b");
});

test("redisSeenCache flushed: the duplicate is still answered duplicate, by Postgres", { skip }, async () => {
  await admin.flushdb();
  const seen = cache();
  await seen.connect();
  const db = counting(ingest);
  const reply = await post({ db, seen }, "evt_shared");
  assert.deepEqual(reply.body, { status: "duplicate", id: "evt_shared" });
  assert.ok(db.count > 0, "Postgres must answer what Redis no longer knows");
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_shared", "stripe"), {
    events: 1,
    duplicates: 1,
  });
  // …and the answer put the id back.
  await waitFor("the id to be cached again", async () => (await inRedis("evt_shared")) === 1, 5000);
});

test("redisSeenCache down: deliveries are answered correctly, without waiting for Redis", {
  skip,
}, async () => {
  const seen = cache(`redis://127.0.0.1:${await freePort()}/15`);
  const accepted = await post({ db: ingest, seen }, "evt_redis_down");
  const duplicate = await post({ db: ingest, seen }, "evt_redis_down");
  assert.deepEqual(accepted.body, { status: "accepted", id: "evt_redis_down" });
  assert.deepEqual(duplicate.body, { status: "duplicate", id: "evt_redis_down" });
  assert.ok(accepted.ms < 1000 && duplicate.ms < 1000, `${accepted.ms} ms, ${duplicate.ms} ms`);
});

test("redisSeenCache stalled (connected, never answering): the delivery is answered without it", {
  skip,
}, async () => {
  const silent = createServer(() => {}).listen(0, "127.0.0.1");
  await new Promise((resolve) => silent.once("listening", resolve));
  const address = silent.address();
  const port = typeof address === "object" && address ? address.port : 0;
  try {
    const seen = cache(`redis://127.0.0.1:${port}/15`);
    const reply = await post({ db: ingest, seen }, "evt_redis_stalled");
    assert.deepEqual(reply.body, { status: "accepted", id: "evt_redis_stalled" });
    assert.ok(reply.ms < 1000, `${reply.ms} ms`);
  } finally {
    silent.close();
  }
});

test("redisSeenCache paused mid-command: the lookup times out and Postgres answers", { skip }, async () => {
  const seen = cache(REDIS_URL, { commandTimeoutMs: 100 });
  await seen.connect();
  assert.equal((await post({ db: ingest }, "evt_redis_paused")).body.status, "accepted");
  await admin.client("PAUSE", 2000, "ALL");
  try {
    const reply = await post({ db: ingest, seen }, "evt_redis_paused");
    assert.deepEqual(reply.body, { status: "duplicate", id: "evt_redis_paused" });
    assert.ok(reply.ms < 1000, `${reply.ms} ms`);
  } finally {
    await admin.client("UNPAUSE");
  }
});

test("redisSeenCache: a claim that failed (503) never enters Redis", { skip }, async () => {
  const seen = cache();
  await seen.connect();
  const down = createPool({
    connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
    role: "ingest",
  });
  try {
    assert.equal((await post({ db: down, seen }, "evt_failed_claim")).status, 503);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await inRedis("evt_failed_claim"), 0);
    assert.equal(await seen.has("stripe", "evt_failed_claim"), false);
  } finally {
    await down.end();
  }
});

test("layeredSeenCache: a hit in Redis is copied into memory; add records in both", { skip }, async () => {
  const memory = memorySeenCache();
  const redis = cache();
  await redis.connect();
  const seen = layeredSeenCache(memory, redis);
  await admin.set(redis.keyOf("stripe", "evt_layer_hit"), H1);
  assert.equal(await seen.get("stripe", "evt_layer_hit"), H1);
  assert.equal(await memory.get("stripe", "evt_layer_hit"), H1);
  // The bare "1" of earlier releases carries no hash: a miss, so Postgres answers and the key is rewritten.
  await admin.set(redis.keyOf("stripe", "evt_layer_legacy"), "1");
  assert.equal(await seen.has("stripe", "evt_layer_legacy"), false);
  seen.add("stripe", "evt_layer_add", H1);
  assert.equal(await memory.has("stripe", "evt_layer_add"), true);
  await waitFor("the id to reach Redis", async () => (await inRedis("evt_layer_add")) === 1, 5000);
});

test("layeredSeenCache: a layer that fails is skipped; the error surfaces only without a hit", {
  skip,
}, async () => {
  const broken = {
    get: () => Promise.reject(new Error("redis timed out")),
    add: () => {
      throw new Error("must not break the others");
    },
  };
  const memory = memorySeenCache();
  const seen = layeredSeenCache(broken, memory);
  seen.add("stripe", "evt_1", H1);
  assert.equal(await seen.has("stripe", "evt_1"), true);
  await assert.rejects(seen.has("stripe", "evt_unknown"), /redis timed out/);
});

test("redisSeenCache reconnects by itself after Redis went away and came back", { skip }, async () => {
  // A TCP proxy in front of the real Redis stands for the Redis host going down and up again.
  const target = new URL(REDIS_URL);
  const sockets = new Set<Socket>();
  const proxy = () =>
    createServer((client) => {
      const upstream = connect(Number(target.port || 6379), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("error", () => {});
        s.on("close", () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
  const port = await freePort();
  let server = proxy().listen(port, "127.0.0.1");
  const seen = cache(`redis://127.0.0.1:${port}${target.pathname}`);
  try {
    await seen.connect();
    seen.add("stripe", "evt_reconnect", H1);
    await waitFor("the id to reach Redis", () => seen.has("stripe", "evt_reconnect"), 5000);

    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
    // A command in flight when the connection dropped fails (the receiver counts that as a miss); once the client
    // has noticed, every lookup is a miss at once, without a round trip.
    const lookup = () => seen.has("stripe", "evt_reconnect").catch(() => "failed" as const);
    await waitFor("the cache to notice", async () => (await lookup()) === false, 5000);
    const started = performance.now();
    assert.equal(await lookup(), false);
    assert.ok(performance.now() - started < 50, "a miss without waiting");

    server = proxy().listen(port, "127.0.0.1");
    await waitFor("the cache to reconnect", async () => (await lookup()) === true, 10_000);
  } finally {
    server.close();
    for (const s of sockets) s.destroy();
  }
});
