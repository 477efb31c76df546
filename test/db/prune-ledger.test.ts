import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { PruneRefused, runPrune } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

const DAY = 86_400_000;
let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

/** Claims events and moves them to a state, `ageDays` ago (settled_at and received_at). */
async function seed(source: string, ids: string[], status: string, ageDays: number): Promise<void> {
  for (const id of ids) await claimTestEvent(t.pool, t.ledger, { source, id });
  await t.pool.query(
    `update ${t.ledger.s}.events set status = $3::text,
       outcome = case when $3::text = 'settled' then 'applied' end,
       settled_at = case when $3::text = 'settled' then now() - $4::int * interval '1 day' end,
       received_at = now() - ($4::int + 1) * interval '1 day'
     where source = $1::text and dedupe_key = any($2::text[])`,
    [source, ids, status, ageDays],
  );
}

const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}_${i}`);

async function keys(table: "events" | "tombstones" | "duplicates", source: string): Promise<string[]> {
  const r = await t.pool.query<{ dedupe_key: string }>(
    `select dedupe_key from ${t.ledger.s}.${table} where source = $1 order by dedupe_key`,
    [source],
  );
  return r.rows.map((row) => row.dedupe_key);
}

const prune = (source: string, olderThanDays: number, extra: Record<string, unknown> = {}) =>
  runPrune(t.pool, t.ledger, {
    sources: [{ name: source, provider: "stripe" }],
    olderThanMs: olderThanDays * DAY,
    tombstonesOlderThanMs: 365 * DAY,
    ...extra,
  });

test("runPrune deletes only settled rows older than the horizon; pending, failed, dead, inline and recent stay", async () => {
  await seed("keep", ["old_settled"], "settled", 100);
  await seed("keep", ["recent_settled"], "settled", 10);
  await seed("keep", ["old_pending"], "pending", 100);
  await seed("keep", ["old_failed"], "failed", 100);
  await seed("keep", ["old_dead"], "dead", 100);
  await seed("keep", ["old_inline"], "inline", 100);
  await seed("other", ["other_settled"], "settled", 100);
  await claimTestEvent(t.pool, t.ledger, { source: "keep", id: "old_settled" }); // a duplicate count row
  const report = await prune("keep", 90);
  assert.equal(report.pruned, 1);
  assert.deepEqual(report.sources, [{ source: "keep", pruned: 1 }]);
  assert.deepEqual(await keys("events", "keep"), [
    "old_dead",
    "old_failed",
    "old_inline",
    "old_pending",
    "recent_settled",
  ]);
  assert.deepEqual(await keys("tombstones", "keep"), ["old_settled"]);
  assert.deepEqual(await keys("duplicates", "keep"), [], "the pruned row's duplicate count goes with it");
  assert.deepEqual(await keys("events", "other"), ["other_settled"], "another source is untouched");
});

test("runPrune of 2,500 rows with batch 1,000 deletes them all in three batches, tombstoning each key", async () => {
  await seed("bulk", ids("b", 2500), "settled", 120);
  const progress: number[] = [];
  const report = await prune("bulk", 90, {
    batchSize: 1000,
    onProgress: (p: { pruned: number }) => progress.push(p.pruned),
  });
  assert.equal(report.pruned, 2500);
  assert.deepEqual(progress.slice(0, 3), [1000, 2000, 2500]);
  assert.deepEqual(await keys("events", "bulk"), []);
  assert.equal((await keys("tombstones", "bulk")).length, 2500);
});

test("runPrune with duty 0.01 waits 99 times each batch's own time after it; duty out of range is refused", async () => {
  await seed("paced", ids("p", 500), "settled", 120);
  const started = performance.now();
  const report = await prune("paced", 90, { batchSize: 100, duty: 0.01 });
  const elapsed = performance.now() - started;
  assert.equal(report.pruned, 500);
  // Five batches, each of two statements (well over 1 ms), then as much again 99 times: flat out they take ~30 ms.
  assert.ok(elapsed >= 400, `five paced batches took ${Math.round(elapsed)} ms`);
  await assert.rejects(prune("paced", 90, { duty: 0 }), /duty must be above 0 and at most 1, got 0/);
  await assert.rejects(prune("paced", 90, { duty: 1.5 }), /duty must be above 0 and at most 1/);
});

test("runPrune with dryRun counts and deletes nothing", async () => {
  await seed("dry", ids("d", 5), "settled", 100);
  const report = await prune("dry", 90, { dryRun: true });
  assert.equal(report.dryRun, true);
  assert.equal(report.pruned, 5);
  assert.equal((await keys("events", "dry")).length, 5);
  assert.deepEqual(await keys("tombstones", "dry"), []);
});

test("runPrune refuses a horizon shorter than the provider's replay window, naming source and window; force prunes", async () => {
  await seed("paddle", ["p_1"], "settled", 40);
  const refusal = (await runPrune(t.pool, t.ledger, {
    sources: [{ name: "paddle", provider: "paddle" }],
    olderThanMs: 30 * DAY,
    tombstonesOlderThanMs: 365 * DAY,
  }).catch((e: unknown) => e)) as PruneRefused;
  assert.ok(refusal instanceof PruneRefused);
  assert.match(refusal.message, /paddle \(paddle: replay window 90 days\).*--force/);
  assert.deepEqual(await keys("events", "paddle"), ["p_1"]);
  const forced = await runPrune(t.pool, t.ledger, {
    sources: [{ name: "paddle", provider: "paddle" }],
    olderThanMs: 30 * DAY,
    tombstonesOlderThanMs: 365 * DAY,
    force: true,
  });
  assert.equal(forced.pruned, 1);
});

test("runPrune refuses a tombstone horizon not longer than the prune horizon", async () => {
  await assert.rejects(prune("x", 90, { tombstonesOlderThanMs: 90 * DAY }), PruneRefused);
});

test("runPrune expires tombstones of events received before the second horizon, and only those", async () => {
  await seed("exp", ["e_old"], "settled", 400);
  await seed("exp", ["e_young"], "settled", 100);
  const report = await prune("exp", 90);
  assert.equal(report.pruned, 2);
  assert.equal(report.tombstonesExpired, 1);
  assert.deepEqual(await keys("tombstones", "exp"), ["e_young"]);
});

test("runPrune deletes a pruned event's sent outbox messages; its pending and dead ones, and a kept event's, stay", async () => {
  await seed("mail", ["old_settled"], "settled", 100);
  await seed("mail", ["recent_settled"], "settled", 10);
  const message = (id: string, key: string, status: string) =>
    t.pool.query(
      `insert into ${t.ledger.s}.outbox (source, dedupe_key, message_key, sender, idempotency_key, payload, status)
       values ('mail', $1, $2, 'email', $1 || $2, '{}', $3)`,
      [id, key, status],
    );
  await message("old_settled", "#0", "sent");
  await message("old_settled", "#1", "pending");
  await message("old_settled", "#2", "dead");
  await message("recent_settled", "#0", "sent");
  await prune("mail", 90);
  const { rows } = await t.pool.query<{ m: string }>(
    `select dedupe_key || ' ' || message_key as m from ${t.ledger.s}.outbox where source = 'mail' order by 1`,
  );
  assert.deepEqual(
    rows.map((r) => r.m),
    ["old_settled #1", "old_settled #2", "recent_settled #0"],
  );
});
