// Inspect and repair at the ledger: listEvents' filters, getEvent with its duplicates, retryEvents' refusals and
// NOTIFY, requeueEvents in batches.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { claimTestEvent } from "../helpers/events.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { seedDead, seedEvents } from "../helpers/ledger-rows.js";
import { getEvent, listEvents } from "hookledger";
import { retryEvents } from "hookledger";
import { countRequeue, requeueEvents } from "../../src/ledger/requeue.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
  await seedEvents(t.pool, t.ledger, [
    { source: "stripe", id: "evt_old", type: "invoice.paid", status: "settled", receivedAgo: 7200 },
    {
      source: "stripe",
      id: "evt_stale",
      type: "invoice.paid",
      status: "settled",
      outcome: "stale",
      receivedAgo: 60,
    },
    {
      source: "stripe",
      id: "evt_dead",
      type: "customer.updated",
      status: "dead",
      attempts: 10,
      lastError: "boom",
    },
    { source: "github", id: "gh_1", type: "push", status: "failed", attempts: 2, receivedAgo: 30 },
    { source: "github", id: "gh/with/slash", type: "push", status: "pending", receivedAgo: 10 },
  ]);
});
after(() => t?.drop());

const ids = (events: { source: string; dedupeKey: string }[]) =>
  events.map((e) => `${e.source}/${e.dedupeKey}`);

test("listEvents: newest first, each filter narrows, the limit cuts", async () => {
  const all = await listEvents(t.pool, t.ledger, {});
  assert.deepEqual(ids(all), [
    "stripe/evt_dead",
    "github/gh/with/slash",
    "github/gh_1",
    "stripe/evt_stale",
    "stripe/evt_old",
  ]);
  assert.deepEqual(ids(await listEvents(t.pool, t.ledger, { source: "github" })), [
    "github/gh/with/slash",
    "github/gh_1",
  ]);
  assert.deepEqual(ids(await listEvents(t.pool, t.ledger, { status: "dead" })), ["stripe/evt_dead"]);
  assert.deepEqual(ids(await listEvents(t.pool, t.ledger, { outcome: "stale" })), ["stripe/evt_stale"]);
  assert.deepEqual(ids(await listEvents(t.pool, t.ledger, { type: "invoice.paid", source: "stripe" })), [
    "stripe/evt_stale",
    "stripe/evt_old",
  ]);
  const hourAgo = new Date(Date.now() - 3_600_000);
  assert.deepEqual(ids(await listEvents(t.pool, t.ledger, { until: hourAgo })), ["stripe/evt_old"]);
  assert.equal((await listEvents(t.pool, t.ledger, { since: hourAgo })).length, 4);
  assert.deepEqual(ids(await listEvents(t.pool, t.ledger, {}, 2)), [
    "stripe/evt_dead",
    "github/gh/with/slash",
  ]);
  const [dead] = await listEvents(t.pool, t.ledger, { status: "dead" });
  assert.equal(dead?.attempts, 10);
  assert.equal(dead?.lastError, "boom");
  assert.equal(dead?.arrivedVia, "delivery");
});

test("getEvent: payload, headers, duplicates and body mismatches; undefined for an unknown id", async () => {
  const body = JSON.stringify({ id: "evt_dup", object: "event" });
  await claimTestEvent(t.pool, t.ledger, { source: "dup", id: "evt_dup", body, payload: JSON.parse(body) });
  await claimTestEvent(t.pool, t.ledger, { source: "dup", id: "evt_dup", body });
  await claimTestEvent(t.pool, t.ledger, { source: "dup", id: "evt_dup", body: `${body} ` });
  const event = await getEvent(t.pool, t.ledger, "dup", "evt_dup");
  assert.ok(event);
  assert.deepEqual(event.payload, { id: "evt_dup", object: "event" });
  assert.equal(event.duplicates, 2);
  assert.equal(event.bodyMismatches, 1);
  assert.equal(event.bodyBytes, Buffer.byteLength(body));
  assert.equal(event.status, "pending");
  assert.equal(await getEvent(t.pool, t.ledger, "dup", "evt_nope"), undefined);
  assert.equal(await getEvent(t.pool, t.ledger, "DUP", "evt_dup"), undefined);
});

test("retryEvents: failed and dead become pending now with attempts kept; settled refused without force; NOTIFY sent", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "retry", id: "dead", status: "dead", attempts: 10, lastError: "boom" },
    { source: "retry", id: "failed", status: "failed", attempts: 3, nextAttemptIn: 3600 },
    { source: "retry", id: "settled", status: "settled" },
    { source: "retry", id: "pending", status: "pending" },
  ]);
  const listener = await t.pool.connect();
  const heard: string[] = [];
  listener.on("notification", (n) => heard.push(n.channel));
  await listener.query(`listen "${t.ledger.channel}"`);
  try {
    const keys = ["dead", "failed", "settled", "pending", "missing"].map((id) => ({
      source: "retry",
      dedupeKey: id,
    }));
    const results = await retryEvents(t.pool, t.ledger, keys);
    assert.deepEqual(
      results.map((r) => [r.dedupeKey, r.result]),
      [
        ["dead", "retried"],
        ["failed", "retried"],
        ["settled", "settled"],
        ["pending", "pending"],
        ["missing", "missing"],
      ],
    );
    const { rows } = await t.pool.query(
      `select dedupe_key, status, attempts, last_error, next_attempt_at <= now() as due, arrived_via
       from ${t.ledger.s}.events where source = 'retry' order by dedupe_key`,
    );
    assert.deepEqual(rows, [
      {
        dedupe_key: "dead",
        status: "pending",
        attempts: 10,
        last_error: "boom",
        due: true,
        arrived_via: "delivery",
      },
      {
        dedupe_key: "failed",
        status: "pending",
        attempts: 3,
        last_error: null,
        due: true,
        arrived_via: "delivery",
      },
      {
        dedupe_key: "pending",
        status: "pending",
        attempts: 0,
        last_error: null,
        due: true,
        arrived_via: "delivery",
      },
      {
        dedupe_key: "settled",
        status: "settled",
        attempts: 0,
        last_error: null,
        due: true,
        arrived_via: "delivery",
      },
    ]);
    await waitForNotification(heard, 1);
    assert.equal(heard[0], t.ledger.channel);

    const forced = await retryEvents(t.pool, t.ledger, [{ source: "retry", dedupeKey: "settled" }], {
      force: true,
    });
    assert.deepEqual(
      forced.map((r) => r.result),
      ["retried"],
    );
    const settled = await getEvent(t.pool, t.ledger, "retry", "settled");
    assert.deepEqual([settled?.status, settled?.outcome, settled?.settledAt], ["pending", null, null]);
    await waitForNotification(heard, 2);

    // Nothing retried: no NOTIFY.
    await retryEvents(t.pool, t.ledger, [{ source: "retry", dedupeKey: "missing" }]);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(heard.length, 2);
  } finally {
    listener.release();
  }
});

test("retryEvents: an event a worker holds is reported busy, not waited for", async () => {
  await seedEvents(t.pool, t.ledger, [{ source: "busy", id: "held", status: "failed", attempts: 1 }]);
  const worker = await t.pool.connect();
  try {
    await worker.query("begin");
    await worker.query(`select 1 from ${t.ledger.s}.events where source = 'busy' for update`);
    const [result] = await retryEvents(t.pool, t.ledger, [{ source: "busy", dedupeKey: "held" }]);
    assert.equal(result?.result, "busy");
  } finally {
    await worker.query("rollback");
    worker.release();
  }
});

test("requeueEvents: 2,500 dead rows in 3 batches, NOTIFY per batch, other sources and statuses untouched", async () => {
  await seedDead(t.pool, t.ledger, "bulk", 2500);
  await seedDead(t.pool, t.ledger, "other", 3);
  await seedEvents(t.pool, t.ledger, [{ source: "bulk", id: "failed_one", status: "failed", attempts: 1 }]);
  assert.equal(await countRequeue(t.pool, t.ledger, { status: "dead", source: "bulk" }), 2500);
  const listener = await t.pool.connect();
  const heard: string[] = [];
  listener.on("notification", (n) => heard.push(n.channel));
  await listener.query(`listen "${t.ledger.channel}"`);
  try {
    const batches: number[] = [];
    const report = await requeueEvents(
      t.pool,
      t.ledger,
      { status: "dead", source: "bulk" },
      {
        onBatch: (n) => {
          batches.push(n);
        },
      },
    );
    assert.deepEqual(report, { matched: 2500, requeued: 2500, batches: 3 });
    assert.deepEqual(batches, [1000, 1000, 500]);
    await waitForNotification(heard, 3);
  } finally {
    listener.release();
  }
  const { rows } = await t.pool.query(
    `select source, status, min(attempts)::int as attempts, count(*)::int as n from ${t.ledger.s}.events
     where source in ('bulk', 'other') group by source, status order by source, status`,
  );
  assert.deepEqual(rows, [
    { source: "bulk", status: "failed", attempts: 1, n: 1 },
    { source: "bulk", status: "pending", attempts: 10, n: 2500 },
    { source: "other", status: "dead", attempts: 10, n: 3 },
  ]);
  assert.equal(await countRequeue(t.pool, t.ledger, { status: "dead", source: "bulk" }), 0);
});

test("requeueEvents: filters by type and time", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "rq", id: "a", type: "x", status: "dead", receivedAgo: 7200 },
    { source: "rq", id: "b", type: "x", status: "dead", receivedAgo: 60 },
    { source: "rq", id: "c", type: "y", status: "dead", receivedAgo: 60 },
  ]);
  const since = new Date(Date.now() - 3_600_000);
  const report = await requeueEvents(t.pool, t.ledger, { status: "dead", source: "rq", type: "x", since });
  assert.deepEqual(report, { matched: 1, requeued: 1, batches: 1 });
  const { rows } = await t.pool.query(
    `select dedupe_key, status from ${t.ledger.s}.events where source = 'rq' order by dedupe_key`,
  );
  assert.deepEqual(
    rows.map((r) => `${r.dedupe_key}:${r.status}`),
    ["a:dead", "b:pending", "c:dead"],
  );
});

test("requeueEvents: a row that moved on after the keys were read is left alone", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "moved", id: "1", status: "dead", receivedAgo: 3 },
    { source: "moved", id: "2", status: "dead", receivedAgo: 2 },
  ]);
  const report = await requeueEvents(
    t.pool,
    t.ledger,
    { status: "dead", source: "moved" },
    {
      batchSize: 1,
      onBatch: async () => {
        await t.pool.query(
          `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied' where source = 'moved' and status = 'dead'`,
        );
      },
    },
  );
  assert.deepEqual(report, { matched: 2, requeued: 1, batches: 2 });
});

async function waitForNotification(heard: string[], count: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (heard.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(heard.length, count, "notifications heard");
}
