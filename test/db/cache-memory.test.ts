// The in-process confirmed-duplicate cache: bounded (CLOCK eviction), consulted before the claim and filled only after a
// claim committed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { layeredSeenCache, memorySeenCache, type SeenCache, silentLogger } from "hookledger";
import { createPool, type Pool } from "hookledger";
import { createReceiver, type Provider, type ReceiverOptions, stripeProvider } from "hookledger";
import type { DeliveryReport } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { ledgerCounts } from "../helpers/http.js";
import { freePort } from "../helpers/net.js";
import { counting, postOnce } from "../helpers/cache.js";
import {
  NOW_S,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  serve,
  stripeBody,
  stripeHeaders,
  stripeSignature,
} from "../helpers/http.js";
import { createDuplicateCounter } from "../../src/ledger/cached-duplicates.js";

const H1 = "a".repeat(64);

let t: TestLedger;
let ingest: Pool;
before(async () => {
  t = await freshLedger();
  ingest = t.newPool("ingest");
});
after(() => t.drop());

// Status and body only: these tests compare whole answers.
async function post(options: Partial<ReceiverOptions> & Pick<ReceiverOptions, "db">, id: string) {
  const { status, body } = await postOnce(t.ledger, options, id);
  return { status, body };
}

test("memorySeenCache keeps at most max ids, dropping one not looked up since the hand last passed", async () => {
  const seen = memorySeenCache({ max: 2 });
  seen.add("stripe", "evt_1", H1);
  seen.add("stripe", "evt_2", H1);
  assert.equal(await seen.has("stripe", "evt_1"), true); // evt_1 is now the most recent
  seen.add("stripe", "evt_3", H1);
  assert.equal(seen.size, 2);
  assert.equal(await seen.has("stripe", "evt_2"), false);
  assert.equal(await seen.has("stripe", "evt_1"), true);
  assert.equal(await seen.has("stripe", "evt_3"), true);
  assert.equal(await seen.get("stripe", "evt_3"), H1, "the body's hash is kept with the id");
});

test("memorySeenCache.peek answers at once, as get does, and marks the id recently used", async () => {
  const seen = memorySeenCache({ max: 2 });
  seen.add("stripe", "evt_1", H1);
  seen.add("stripe", "evt_2", H1);
  assert.equal(seen.peek("stripe", "evt_1"), H1);
  assert.equal(seen.peek("stripe", "evt_9"), undefined);
  seen.add("stripe", "evt_3", H1);
  assert.equal(seen.peek("stripe", "evt_2"), undefined, "evt_2 was never looked up");
  assert.equal(await seen.get("stripe", "evt_1"), H1);
});

test("layeredSeenCache peeks its first layer only; a later layer's ids are left to get, which copies them forward", async () => {
  const memory = memorySeenCache();
  const slow: SeenCache = {
    get: async (_source, key) => (key === "evt_far" ? H1 : undefined),
    add: () => {},
  };
  const layered = layeredSeenCache(memory, slow);
  memory.add("stripe", "evt_near", H1);
  assert.equal(layered.peek?.("stripe", "evt_near"), H1);
  assert.equal(layered.peek?.("stripe", "evt_far"), undefined);
  assert.equal(await layered.get("stripe", "evt_far"), H1);
  assert.equal(layered.peek?.("stripe", "evt_far"), H1, "copied into memory by get");
  assert.equal(layeredSeenCache(slow, memory).peek, undefined, "a first layer without peek: no peek");
});

test("memorySeenCache keeps sources apart and refuses a max below 1", async () => {
  const seen = memorySeenCache();
  seen.add("stripe", "evt_1", H1);
  assert.equal(await seen.has("stripe-eu", "evt_1"), false);
  assert.throws(() => memorySeenCache({ max: 0 }), /positive integer/);
});

test("receiver with memorySeenCache: a committed id's duplicate is answered without a database query", async () => {
  const seen = memorySeenCache();
  const reports: DeliveryReport[] = [];
  const db = counting(ingest);
  const options = { db, seen, observer: { delivery: (r: DeliveryReport) => reports.push(r) } };
  assert.deepEqual(await post(options, "evt_mem"), {
    status: 200,
    body: { status: "accepted", id: "evt_mem" },
  });
  assert.equal(await seen.has("stripe", "evt_mem"), true);
  const before = db.count;
  assert.deepEqual(await post(options, "evt_mem"), {
    status: 200,
    body: { status: "duplicate", id: "evt_mem" },
  });
  assert.equal(db.count, before, "the cached duplicate must not reach the database");
  assert.equal(reports.at(-1)?.shortCircuit, true);
  // Counted in the ledger only through a duplicate counter (the service's and createHookledger's observer).
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_mem", "stripe"), { events: 1, duplicates: 0 });
});

const mismatches = async (id: string) => {
  const { rows } = await t.pool.query<{ n: number }>(
    `select coalesce(sum(body_mismatches), 0)::int as n from ${t.ledger.s}.duplicates where dedupe_key = $1::text`,
    [id],
  );
  return rows[0]?.n;
};

test("receiver with memorySeenCache: a same-id delivery with another body is an alarm on a warm cache too", async () => {
  const seen = memorySeenCache();
  const reports: DeliveryReport[] = [];
  const options = { db: ingest, seen, observer: { delivery: (r: DeliveryReport) => reports.push(r) } };
  assert.equal((await post(options, "evt_mem_mismatch")).body.status, "accepted");
  assert.equal((await post(options, "evt_mem_mismatch")).body.status, "duplicate");
  assert.equal(reports.at(-1)?.shortCircuit, true, "the same body is answered from the cache");
  const other = stripeBody("evt_mem_mismatch", { type: "customer.subscription.deleted" });
  const reply = await postOnce(t.ledger, options, "evt_mem_mismatch", other);
  assert.deepEqual(reply.body, { status: "duplicate", id: "evt_mem_mismatch" });
  assert.equal(reports.at(-1)?.bodyMismatch, true, "the mismatch reaches the metrics and statistics");
  assert.equal(await mismatches("evt_mem_mismatch"), 1, "and the ledger's duplicates.body_mismatches");
});

test("receiver: a body answered as a duplicate is known by its sha256 next time, answered without parsing it again", async () => {
  let parses = 0;
  const stripe = stripeProvider();
  const steps = stripe.steps;
  assert.ok(steps);
  const counted: Provider = {
    ...stripe,
    steps: {
      authenticate: (input) => steps.authenticate(input),
      parse: (body) => {
        parses++;
        return steps.parse(body);
      },
    },
  };
  const seen = memorySeenCache({ max: 2 });
  const reports: DeliveryReport[] = [];
  const db = counting(ingest);
  const server = await serve(
    createReceiver({
      sources: [{ name: "stripe", provider: counted, secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP }],
      db,
      ledger: t.ledger,
      log: silentLogger(),
      now: () => NOW_S * 1000,
      seen,
      observer: { delivery: (r) => reports.push(r) },
    }),
  );
  try {
    const deliver = async (payload: string, headers = stripeHeaders(payload)) => {
      const reply = await send(`${server.url}/webhooks/stripe`, { headers, body: payload });
      return { status: reply.status, body: JSON.parse(reply.text) as { status: string; id: string } };
    };
    const body = stripeBody("evt_known_body");
    const duplicate = { status: 200, body: { status: "duplicate", id: "evt_known_body" } };
    assert.deepEqual(await deliver(body), {
      status: 200,
      body: { status: "accepted", id: "evt_known_body" },
    });
    assert.deepEqual(await deliver(body), duplicate); // the cache answers, the body is parsed
    assert.equal(parses, 2);
    const queries = db.count;
    assert.deepEqual(await deliver(body), duplicate);
    // Signed anew (another timestamp): the signature is still checked, and the bytes are the same.
    assert.deepEqual(await deliver(body, stripeHeaders(body, STRIPE_SECRETS[1], NOW_S - 10)), duplicate);
    assert.equal(parses, 2, "a known body is not parsed again");
    assert.equal(db.count, queries, "nor sent to the database");
    assert.deepEqual(
      reports.slice(-2).map((r) => [r.result, r.shortCircuit, r.eventId]),
      [
        ["duplicate", true, "evt_known_body"],
        ["duplicate", true, "evt_known_body"],
      ],
    );
    const forged = { ...stripeHeaders(body), "stripe-signature": stripeSignature(body, "whsec_forged") };
    assert.equal((await send(`${server.url}/webhooks/stripe`, { headers: forged, body })).status, 401);

    // Once the cache has forgotten the event (looked up, it outlives one turn of the cache's hand: three new ids
    // for a cache of two), its body is parsed and Postgres answers again.
    for (const id of ["evt_known_other_1", "evt_known_other_2", "evt_known_other_3"]) {
      assert.equal((await deliver(stripeBody(id))).body.status, "accepted");
    }
    assert.equal(await seen.has("stripe", "evt_known_body"), false);
    const before = db.count;
    assert.deepEqual(await deliver(body), duplicate);
    assert.ok(db.count > before, "Postgres answered");
    assert.equal(parses, 6);
  } finally {
    await server.close();
  }
});

test("a duplicate counter adds cached duplicates to the ledger's count in one write per flush", async () => {
  const seen = memorySeenCache();
  const counter = createDuplicateCounter({ db: t.pool, ledger: t.ledger, log: silentLogger() });
  try {
    const db = counting(ingest);
    const options = { db, seen, observer: counter };
    assert.equal((await post(options, "evt_mem_count")).body.status, "accepted");
    const before = db.count;
    for (let i = 0; i < 3; i++) assert.equal((await post(options, "evt_mem_count")).body.status, "duplicate");
    assert.equal(db.count, before, "no database round trip on the cached path");
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_mem_count", "stripe"), {
      events: 1,
      duplicates: 0,
    });
    await counter.flush();
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_mem_count", "stripe"), {
      events: 1,
      duplicates: 3,
    });
  } finally {
    await counter.close();
  }
});

test("receiver with memorySeenCache: a duplicate answered by Postgres enters the cache too", async () => {
  const seen = memorySeenCache();
  assert.equal((await post({ db: ingest }, "evt_pg_dup")).body.status, "accepted");
  assert.equal((await post({ db: ingest, seen }, "evt_pg_dup")).body.status, "duplicate");
  assert.equal(await seen.has("stripe", "evt_pg_dup"), true);
});

test("receiver with memorySeenCache: a claim that failed (503) never enters the cache", async () => {
  const seen = memorySeenCache();
  const down = createPool({
    connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
    role: "ingest",
  });
  try {
    const refused = await post({ db: down, seen }, "evt_failed_claim");
    assert.equal(refused.status, 503);
    assert.equal(seen.size, 0);
    assert.equal(await seen.has("stripe", "evt_failed_claim"), false);
    // The provider's retry reaches a working database and is accepted, not short-circuited as a duplicate.
    const retried = await post({ db: ingest, seen }, "evt_failed_claim");
    assert.deepEqual(retried.body, { status: "accepted", id: "evt_failed_claim" });
  } finally {
    await down.end();
  }
});
