// The in-process confirmed-duplicate cache: a bounded LRU, consulted before the claim and filled only after a
// claim committed.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { memorySeenCache } from "hookledger";
import { createPool, type Pool } from "hookledger";
import type { ReceiverOptions } from "hookledger";
import type { DeliveryReport } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { ledgerCounts } from "../helpers/http.js";
import { freePort } from "../helpers/net.js";
import { counting, postOnce } from "../helpers/cache.js";

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

test("memorySeenCache keeps at most max ids, dropping the least recently used", async () => {
  const seen = memorySeenCache({ max: 2 });
  seen.add("stripe", "evt_1");
  seen.add("stripe", "evt_2");
  assert.equal(await seen.has("stripe", "evt_1"), true); // evt_1 is now the most recent
  seen.add("stripe", "evt_3");
  assert.equal(seen.size, 2);
  assert.equal(await seen.has("stripe", "evt_2"), false);
  assert.equal(await seen.has("stripe", "evt_1"), true);
  assert.equal(await seen.has("stripe", "evt_3"), true);
});

test("memorySeenCache keeps sources apart and refuses a max below 1", async () => {
  const seen = memorySeenCache();
  seen.add("stripe", "evt_1");
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
  // Not counted in the ledger's duplicates either: the cache answered.
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_mem", "stripe"), { events: 1, duplicates: 0 });
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
