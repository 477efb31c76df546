import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { resolveConfig } from "hookledger";
import { silentLogger } from "hookledger";
import { startService } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { fakeEvent, startFakeStripe } from "../helpers/fake-stripe.js";
import { seedEvents } from "../helpers/ledger-rows.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

test("startService with schedules.prune prunes settled rows past the horizon on its interval and keeps tombstones", async () => {
  const forty = 40 * 86_400;
  await seedEvents(t.pool, t.ledger, [
    {
      source: "stripe",
      id: "evt_old",
      status: "settled",
      outcome: "applied",
      receivedAgo: forty,
      settledAfter: 1,
    },
    { source: "stripe", id: "evt_new", status: "settled", outcome: "applied" },
    { source: "stripe", id: "evt_old_dead", status: "dead", receivedAgo: forty },
  ]);
  const service = await startService(
    resolveConfig(
      {
        database: { url: t.url, schema: t.schema },
        sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
        schedules: { prune: { olderThan: "31d", every: "1s" } },
      },
      {},
    ),
    { log: silentLogger(), serve: false, work: true },
  );
  try {
    await waitFor(
      "the scheduled prune",
      async () => {
        const r = await t.pool.query(`select dedupe_key from ${t.ledger.s}.events order by dedupe_key`);
        return r.rows.length === 2;
      },
      20_000,
    );
    const left = await t.pool.query(`select dedupe_key from ${t.ledger.s}.events order by dedupe_key`);
    assert.deepEqual(
      left.rows.map((r) => r.dedupe_key),
      ["evt_new", "evt_old_dead"],
    );
    const tombs = await t.pool.query(`select dedupe_key from ${t.ledger.s}.tombstones`);
    assert.deepEqual(
      tombs.rows.map((r) => r.dedupe_key),
      ["evt_old"],
    );
  } finally {
    await service.stop();
  }
});

test("startService with schedules.prune.duty 0.01 waits between the prune's batches", async () => {
  const keys = ["evt_paced_1", "evt_paced_2", "evt_paced_3", "evt_paced_4", "evt_paced_5"];
  await seedEvents(
    t.pool,
    t.ledger,
    keys.map((id) => ({ source: "paced", id, status: "settled", receivedAgo: 40 * 86_400, settledAfter: 1 })),
  );
  const left = async () =>
    Number(
      (await t.pool.query(`select count(*) as n from ${t.ledger.s}.events where source = 'paced'`)).rows[0].n,
    );
  const service = await startService(
    resolveConfig(
      {
        database: { url: t.url, schema: t.schema },
        sources: [{ name: "paced", provider: "stripe", secrets: ["whsec_x"] }],
        schedules: { prune: { olderThan: "31d", every: "1h", batchSize: 1, duty: 0.01 } },
      },
      {},
    ),
    { log: silentLogger(), serve: false, work: true },
  );
  try {
    await waitFor("the first batch", async () => (await left()) < keys.length, 20_000);
    const first = performance.now();
    // The waits scale with the batches' own time, so a loaded machine stretches them: give them most of the test's 240 s.
    await waitFor("the last batch", async () => (await left()) === 0, 180_000);
    // A one-row batch is two statements that each commit (and flush WAL): ~10 ms on these machines, surely over
    // 0.4 ms anywhere, so the four waits after the first batch last 99 times that: ~4 s here, 150 ms at the least.
    // Back to back the five batches took 58 ms here, counted the same way (50 ms polls).
    const took = performance.now() - first;
    assert.ok(took >= 150, `five batches in ${took} ms`);
  } finally {
    await service.stop();
  }
});

test("startService with schedules.reconcile claims the Stripe events the ledger lacks, as replays", async () => {
  const fake = await startFakeStripe([fakeEvent("evt_rec_missing", 120), fakeEvent("evt_rec_present", 60)]);
  process.env.HOOKLEDGER_STRIPE_API_BASE = fake.url;
  await seedEvents(t.pool, t.ledger, [{ source: "stripe", id: "evt_rec_present", status: "settled" }]);
  const service = await startService(
    resolveConfig(
      {
        database: { url: t.url, schema: t.schema },
        sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
        schedules: { reconcile: [{ source: "stripe", every: "1h", since: "1h", apiKey: fake.apiKey }] },
        worker: { enabled: true },
      },
      {},
    ),
    { log: silentLogger(), serve: false, work: true },
  );
  try {
    await waitFor("the first reconcile pass", async () => {
      const r = await t.pool.query(
        `select arrived_via from ${t.ledger.s}.events where dedupe_key = 'evt_rec_missing'`,
      );
      return r.rows[0]?.arrived_via === "replay";
    });
  } finally {
    await service.stop();
    delete process.env.HOOKLEDGER_STRIPE_API_BASE;
    await fake.close();
  }
});
