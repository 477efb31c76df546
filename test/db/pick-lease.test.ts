import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Handlers, silentLogger, startWorker } from "hookledger";
import { dueFloor } from "../../src/ledger/due-floor.js";
import { countAttempts } from "../../src/ledger/pick.js";
import { freshLedger, onClient, type TestLedger, testDatabaseUrl, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

// An attempt's lease is a not-before of its own (migration 018): an event whose worker died before recording an
// outcome keeps its place in the queue, so it is not re-picked behind a backlog received after it.

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };

async function claimBacklog(source: string, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${source}_${String(i).padStart(5, "0")}`);
  for (const id of ids) await claimTestEvent(t.pool, t.ledger, { source, id });
  // An hour back, so that the floor is the oldest due event's time rather than its margin before now.
  await t.pool.query(
    `update ${t.ledger.s}.events set next_attempt_at = next_attempt_at - interval '1 hour' where source = $1::text`,
    [source],
  );
  return ids;
}

const endLeases = (source: string) =>
  t.pool.query(
    `update ${t.ledger.s}.events set lease_until = now() - interval '1 ms' where source = $1::text`,
    [source],
  );

test("countAttempts counts an event whose lease ended unrecorded before the events received after it", async () => {
  const ids = await claimBacklog("lease", 100);
  // What a worker killed mid-batch leaves: ten attempts counted and stamped, no outcome, no lock.
  const died = await onClient(t, (c) => countAttempts(c, t.ledger, policy, 10));
  assert.deepEqual(
    died.map((k) => k.dedupe_key),
    ids.slice(0, 10),
  );
  // Under lease they are passed over, and the floor does not stay below them.
  const during = await onClient(t, (c) => countAttempts(c, t.ledger, policy, 5));
  assert.deepEqual(
    during.map((k) => k.dedupe_key),
    ids.slice(10, 15),
  );
  const stamps = await t.pool.query<{ dedupe_key: string; next_attempt_at: Date }>(
    `select dedupe_key, next_attempt_at from ${t.ledger.s}.events where source = 'lease' order by seq`,
  );
  assert.equal(
    (await onClient(t, (c) => dueFloor(c, t.ledger))).getTime(),
    stamps.rows[15]?.next_attempt_at.getTime(),
  );

  await endLeases("lease");
  // Each ended unrecorded, so each is counted alone, oldest first, ahead of the 85 events received after it.
  const floor = await onClient(t, (c) => dueFloor(c, t.ledger));
  assert.equal(floor.getTime(), stamps.rows[0]?.next_attempt_at.getTime());
  for (const id of ids.slice(0, 15)) {
    const again = await onClient(t, (c) => countAttempts(c, t.ledger, policy, 64, floor));
    assert.deepEqual(
      again.map((k) => [k.dedupe_key, k.attempts]),
      [[id, 2]],
    );
  }
  const rest = await onClient(t, (c) => countAttempts(c, t.ledger, policy, 64, floor));
  assert.deepEqual(
    rest.map((k) => k.dedupe_key),
    ids.slice(15, 79),
  );
  await t.pool.query(`delete from ${t.ledger.s}.events where source = 'lease'`);
});

test("startWorker re-picks a dead worker's events at the head of a deep backlog once their lease ends", async () => {
  const ids = await claimBacklog("deep", 3000);
  const died = await onClient(t, (c) => countAttempts(c, t.ledger, policy, 10));
  const order: string[] = [];
  const handlers = new Handlers().on("deep", "test.event", async (ctx) => {
    order.push(ctx.event.id);
    await sleep(6);
  });
  const worker = startWorker({
    pool: t.newPool("work", 2),
    ledger: t.ledger,
    connectionString: testDatabaseUrl(),
    handlers,
    log: silentLogger(),
    pollIntervalMs: 100,
    concurrency: 1,
    batchSize: 10,
  });
  try {
    await waitFor("the backlog settled", async () => order.length >= ids.length, 120_000);
  } finally {
    await worker.stop();
  }
  const places = died.map((k) => order.indexOf(k.dedupe_key));
  assert.ok(
    places.every((place) => place >= 0),
    "each dead attempt's event ran again",
  );
  // Before the lease kept their place they ran last, behind every event received before their lease ended (all
  // 3,000). Now the first floor taken after their lease ends finds them at the head (worker/floor.ts).
  assert.ok(Math.max(...places) < ids.length * 0.75, `re-picked at ${places.join(", ")} of ${order.length}`);
});
