import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { claimEvent } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

async function rows(source: string, key: string) {
  const r = await t.pool.query(
    `select status, attempts from "${t.schema}".events where source = $1 and dedupe_key = $2`,
    [source, key],
  );
  return r.rows;
}

test("claimEvent accepts a new event as one pending row", async () => {
  const ingest = t.newPool("ingest");
  assert.deepEqual(await claimTestEvent(ingest, t.ledger, { id: "evt_new" }), {
    status: "accepted",
    id: "evt_new",
  });
  assert.deepEqual(await rows("test", "evt_new"), [{ status: "pending", attempts: 0 }]);
});

test("claimEvent answers a second claim as a duplicate and counts it", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { id: "evt_dup" });
  assert.deepEqual(await claimTestEvent(ingest, t.ledger, { id: "evt_dup" }), {
    status: "duplicate",
    id: "evt_dup",
    bodyMismatch: false,
  });
  await claimTestEvent(ingest, t.ledger, { id: "evt_dup" });
  const dup = await t.pool.query(`select count from "${t.schema}".duplicates where dedupe_key = 'evt_dup'`);
  assert.equal(dup.rows[0].count, "2");
  assert.equal((await rows("test", "evt_dup")).length, 1);
});

test("claimEvent of the same id with a different body answers duplicate and records the mismatch", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { id: "evt_mismatch", body: '{"id":"evt_mismatch","v":1}' });
  const same = await claimTestEvent(ingest, t.ledger, {
    id: "evt_mismatch",
    body: '{"id":"evt_mismatch","v":1}',
  });
  const other = await claimTestEvent(ingest, t.ledger, {
    id: "evt_mismatch",
    body: '{"id":"evt_mismatch","v":2}',
  });
  assert.deepEqual(same, { status: "duplicate", id: "evt_mismatch", bodyMismatch: false });
  assert.deepEqual(other, { status: "duplicate", id: "evt_mismatch", bodyMismatch: true });
  const dup = await t.pool.query(
    `select count, body_mismatches from "${t.schema}".duplicates where dedupe_key = 'evt_mismatch'`,
  );
  assert.deepEqual(dup.rows[0], { count: "2", body_mismatches: "1" });
});

test("claimEvent keeps the same id apart across sources", async () => {
  const ingest = t.newPool("ingest");
  assert.equal((await claimTestEvent(ingest, t.ledger, { source: "a", id: "evt_same" })).status, "accepted");
  assert.equal((await claimTestEvent(ingest, t.ledger, { source: "b", id: "evt_same" })).status, "accepted");
});

test("claimEvent with 50 concurrent claims of one event accepts exactly one", async () => {
  const ingest = t.newPool("ingest", 25);
  const results = await Promise.all(
    Array.from({ length: 50 }, () => claimTestEvent(ingest, t.ledger, { id: "evt_race" })),
  );
  assert.equal(results.filter((r) => r.status === "accepted").length, 1);
  assert.equal(results.filter((r) => r.status === "duplicate").length, 49);
  assert.equal((await rows("test", "evt_race")).length, 1);
});

test("claimEvent of a duplicate racing an open claim waits for its commit, then answers duplicate", async () => {
  const ingest = t.newPool("ingest");
  const first = await t.pool.connect();
  try {
    await first.query("begin");
    await claimTestEvent(first, t.ledger, { id: "evt_open_commit" });
    let settled = false;
    const second = claimTestEvent(ingest, t.ledger, { id: "evt_open_commit" }).finally(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(settled, false, "the racing claim must wait for the open one");
    await first.query("commit");
    assert.equal((await second).status, "duplicate");
  } finally {
    first.release();
  }
});

test("claimEvent of a duplicate racing an open claim that rolls back is accepted", async () => {
  const ingest = t.newPool("ingest");
  const first = await t.pool.connect();
  try {
    await first.query("begin");
    await claimTestEvent(first, t.ledger, { id: "evt_open_rollback" });
    const second = claimTestEvent(ingest, t.ledger, { id: "evt_open_rollback" });
    await new Promise((r) => setTimeout(r, 100));
    await first.query("rollback");
    assert.equal((await second).status, "accepted");
    assert.equal((await rows("test", "evt_open_rollback")).length, 1);
  } finally {
    first.release();
  }
});

test("claimEvent dedupes on the body hash when the id is unsigned, answering with the first event's id", async () => {
  const ingest = t.newPool("ingest");
  const body = JSON.stringify({ action: "opened", number: 7 });
  await claimTestEvent(ingest, t.ledger, { source: "gh", id: "guid-1", body, dedupeOnBodyHash: true });
  const again = await claimTestEvent(ingest, t.ledger, {
    source: "gh",
    id: "guid-2",
    body,
    dedupeOnBodyHash: true,
  });
  assert.deepEqual(again, { status: "duplicate", id: "guid-1", bodyMismatch: false });
  assert.equal((await rows("gh", "guid-2")).length, 0);
});

test("claimEvent does not dedupe on the body hash when the id is signed", async () => {
  const ingest = t.newPool("ingest");
  const body = JSON.stringify({ same: true });
  await claimTestEvent(ingest, t.ledger, { source: "signed", id: "a", body });
  assert.equal(
    (await claimTestEvent(ingest, t.ledger, { source: "signed", id: "b", body })).status,
    "accepted",
  );
});

test("claimEvent stores the body byte-exact with its sha256", async () => {
  const ingest = t.newPool("ingest");
  const body = Buffer.from('{"id":"evt_bytes", "spacing" :  "kept",\n"é":"\\u00e9"}');
  await claimEvent(ingest, t.ledger, {
    source: "test",
    event: {
      dedupeKey: "evt_bytes",
      type: "t",
      payload: JSON.parse(body.toString()),
      dedupeOnBodyHash: false,
    },
    body,
    headers: { "content-type": "application/json" },
    secretIndex: 1,
    arrivedVia: "delivery",
  });
  const r = await t.pool.query(
    `select body, body_sha256 = sha256(body) as hash_ok, headers, secret_index from "${t.schema}".event_records where dedupe_key = 'evt_bytes'`,
  );
  assert.ok(Buffer.compare(r.rows[0].body, body) === 0);
  assert.equal(r.rows[0].hash_ok, true);
  assert.deepEqual(r.rows[0].headers, { "content-type": "application/json" });
  assert.equal(r.rows[0].secret_index, 1);
});

test("claimEvent notifies the ledger channel on accept only", async () => {
  const ingest = t.newPool("ingest");
  const listener = new pg.Client({ connectionString: t.url });
  await listener.connect();
  try {
    const seen: string[] = [];
    listener.on("notification", (n) => seen.push(n.channel));
    await listener.query(`listen "${t.ledger.channel}"`);
    await claimTestEvent(ingest, t.ledger, { id: "evt_notify" });
    await waitFor("the notification", async () => seen.length === 1, 5000);
    await claimTestEvent(ingest, t.ledger, { id: "evt_notify" });
    await claimTestEvent(ingest, t.ledger, { id: "evt_notify_2" });
    await waitFor("the second notification", async () => seen.length >= 2, 5000);
    assert.equal(seen.length, 2, "the duplicate must not notify");
  } finally {
    await listener.end();
  }
});

test("claimEvent accepts a payload with U+0000, storing U+FFFD in the jsonb and the body byte-exact", async () => {
  const ingest = t.newPool("ingest");
  const body = Buffer.from('{"id":"evt_nul","note":"a\\u0000b"}');
  const payload = JSON.parse(body.toString());
  const result = await claimEvent(ingest, t.ledger, {
    source: "test",
    event: { dedupeKey: "evt_nul", type: "t", payload, dedupeOnBodyHash: false },
    body,
    headers: {},
    secretIndex: 0,
    arrivedVia: "delivery",
  });
  assert.equal(result.status, "accepted");
  const r = await t.pool.query(
    `select body, payload->>'note' as note from "${t.schema}".event_records where dedupe_key = 'evt_nul'`,
  );
  assert.equal(r.rows[0].note, "a\ufffdb");
  assert.ok(Buffer.compare(r.rows[0].body, body) === 0);
});
