import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { silentLogger } from "hookledger";
import { PruneRefused } from "hookledger";
import { startPruner } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

const DAY = 86_400_000;
let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const count = async (table: string) =>
  (await t.pool.query<{ n: number }>(`select count(*)::int as n from ${t.ledger.s}.${table}`)).rows[0]?.n;

async function settleOld(source: string, n: number, prefix: string): Promise<void> {
  for (let i = 0; i < n; i++) await claimTestEvent(t.pool, t.ledger, { source, id: `${prefix}_${i}` });
  await t.pool.query(
    `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied', settled_at = now() - interval '100 days'
     where source = $1::text`,
    [source],
  );
}

test("startPruner prunes on its interval; three instances share one advisory lock and prune each row once", async () => {
  const options = {
    ledger: t.ledger,
    sources: [{ name: "stripe", provider: "stripe" }],
    olderThanMs: 90 * DAY,
    tombstonesOlderThanMs: 365 * DAY,
    everyMs: 50,
    batchSize: 7,
    // Flat out: this test is about the schedule and the lock; pacing has its own tests (prune-ledger,
    // service-schedules). At the scheduled default (duty 0.05) each of the five batches of two commits waits 19 times
    // its own time: ~0.4 s in all here, but a CI run on 2026-12-02 passed the 30 s wait below, as batches of ~0.3 s would.
    duty: 1,
    log: silentLogger(),
  };
  const pruners = [1, 2, 3].map(() => startPruner({ ...options, pool: t.newPool("admin", 2) }));
  try {
    await settleOld("stripe", 30, "first");
    await waitFor("the first rows pruned", async () => (await count("events")) === 0);
    await settleOld("stripe", 20, "second");
    await waitFor("the later rows pruned on a later round", async () => (await count("events")) === 0);
    assert.equal(await count("tombstones"), 50);
  } finally {
    await Promise.all(pruners.map((p) => p.stop()));
  }
  const locks = await t.pool.query(
    "select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = hashtext($1::text)::oid",
    [t.schema],
  );
  assert.equal(locks.rows[0]?.n, 0, "stopped pruners hold no lock");
});

test("startPruner refuses a horizon inside a source's replay window unless forced", async () => {
  const options = {
    pool: t.pool,
    ledger: t.ledger,
    sources: [{ name: "paddle", provider: "paddle" }],
    olderThanMs: 30 * DAY,
    tombstonesOlderThanMs: 365 * DAY,
    everyMs: 60_000,
    log: silentLogger(),
  };
  assert.throws(() => startPruner(options), PruneRefused);
  await startPruner({ ...options, force: true }).stop();
});
