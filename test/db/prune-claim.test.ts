import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { claimInline } from "../../src/ledger/inline-claim.js";
import { runPrune } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { ledgerCounts, send, serve, stripeBody, stripeHeaders, testReceiver } from "../helpers/http.js";

const DAY = 86_400_000;
let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

async function settleLongAgo(source: string, id: string): Promise<void> {
  await t.pool.query(
    `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied',
       settled_at = now() - interval '100 days', received_at = now() - interval '101 days'
     where source = $1::text and dedupe_key = $2::text`,
    [source, id],
  );
}

async function pruneSource(source: string, provider: string): Promise<void> {
  const report = await runPrune(t.pool, t.ledger, {
    sources: [{ name: source, provider }],
    olderThanMs: 90 * DAY,
    tombstonesOlderThanMs: 365 * DAY,
  });
  assert.equal(report.pruned, 1);
}

test("claimEvent of a pruned key answers duplicate, writes no row and counts nothing", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { source: "s1", id: "evt_late", body: '{"v":1}' });
  await settleLongAgo("s1", "evt_late");
  await pruneSource("s1", "stripe");
  assert.deepEqual(
    await claimTestEvent(ingest, t.ledger, { source: "s1", id: "evt_late", body: '{"v":1}' }),
    {
      status: "duplicate",
      id: "evt_late",
      bodyMismatch: false,
    },
  );
  assert.deepEqual(
    await claimTestEvent(ingest, t.ledger, { source: "s1", id: "evt_late", body: '{"v":2}' }),
    {
      status: "duplicate",
      id: "evt_late",
      bodyMismatch: true,
    },
  );
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_late", "s1"), { events: 0, duplicates: 0 });
  const other = await claimTestEvent(ingest, t.ledger, { source: "s2", id: "evt_late" });
  assert.equal(other.status, "accepted", "a tombstone belongs to its source only");
});

test("claimEvent of a pruned body under a new unsigned id (GitHub) answers duplicate with the first id", async () => {
  const ingest = t.newPool("ingest");
  const body = '{"ref":"refs/heads/main","after":"abc"}';
  await claimTestEvent(ingest, t.ledger, { source: "gh", id: "guid-1", body, dedupeOnBodyHash: true });
  await settleLongAgo("gh", "guid-1");
  await pruneSource("gh", "github");
  const replayed = await claimTestEvent(ingest, t.ledger, {
    source: "gh",
    id: "guid-2",
    body,
    dedupeOnBodyHash: true,
  });
  assert.deepEqual(replayed, { status: "duplicate", id: "guid-1", bodyMismatch: false });
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "guid-2", "gh"), { events: 0, duplicates: 0 });
});

test("claimInline of a pruned key answers duplicate, not in flight", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { source: "in", id: "evt_inline" });
  await settleLongAgo("in", "evt_inline");
  await pruneSource("in", "stripe");
  const body = Buffer.from(JSON.stringify({ id: "evt_inline" }));
  const event = {
    dedupeKey: "evt_inline",
    type: "test.event",
    payload: { id: "evt_inline" },
    dedupeOnBodyHash: false,
  };
  const claim = await claimInline(
    ingest,
    t.ledger,
    { source: "in", event, body, headers: {}, secretIndex: 0 },
    60_000,
  );
  assert.deepEqual(claim, { status: "duplicate", id: "evt_inline", bodyMismatch: false, inFlight: false });
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_inline", "in"), { events: 0, duplicates: 0 });
});

test("POST of a pruned Stripe event through the receiver → 200 duplicate, no row", async () => {
  const server = await serve(testReceiver(t.newPool("ingest"), t.ledger));
  try {
    const payload = stripeBody("evt_http_late");
    const post = () =>
      send(`${server.url}/webhooks/stripe`, { headers: stripeHeaders(payload), body: payload });
    assert.deepEqual(JSON.parse((await post()).text), { status: "accepted", id: "evt_http_late" });
    await settleLongAgo("stripe", "evt_http_late");
    await pruneSource("stripe", "stripe");
    const reply = await post();
    assert.equal(reply.status, 200);
    assert.deepEqual(JSON.parse(reply.text), { status: "duplicate", id: "evt_http_late" });
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_http_late", "stripe"), {
      events: 0,
      duplicates: 0,
    });
  } finally {
    await server.close();
  }
});

test("a key whose tombstone expired is accepted again as new", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { source: "old", id: "evt_ancient" });
  await t.pool.query(
    `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied',
       settled_at = now() - interval '400 days', received_at = now() - interval '401 days'
     where source = 'old'`,
  );
  const report = await runPrune(t.pool, t.ledger, {
    sources: [{ name: "old", provider: "stripe" }],
    olderThanMs: 90 * DAY,
    tombstonesOlderThanMs: 365 * DAY,
  });
  assert.deepEqual([report.pruned, report.tombstonesExpired], [1, 1]);
  assert.equal(
    (await claimTestEvent(ingest, t.ledger, { source: "old", id: "evt_ancient" })).status,
    "accepted",
  );
});
