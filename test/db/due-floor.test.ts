import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Handlers, silentLogger, startWorker } from "hookledger";
import { DUE_FLOOR_MARGIN_MS, dueFloor } from "../../src/ledger/due-floor.js";
import { countAttempts } from "../../src/ledger/pick.js";
import { FLOOR_REFRESH_MS } from "../../src/worker/floor.js";
import { freshLedger, onClient, type TestLedger, testDatabaseUrl, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

// The count's floor (src/ledger/due-floor.ts): where its walk of events_due starts, so that the entries a held
// xmin horizon keeps are walked once per refresh instead of by every count (docs/benchmarks.md, "Scale").

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };

const dbNow = async () => (await t.pool.query<{ now: Date }>("select now()")).rows[0]?.now.getTime() ?? 0;
const backdate = (id: string, interval: string) =>
  t.pool.query(
    `update ${t.ledger.s}.events set next_attempt_at = now() - $2::interval where dedupe_key = $1::text`,
    [id, interval],
  );

test("dueFloor is the margin before now when nothing older is due, else the oldest due event's time", async () => {
  const earliest = await dbNow();
  const empty = (await onClient(t, (c) => dueFloor(c, t.ledger))).getTime();
  const latest = await dbNow();
  assert.ok(empty >= earliest - DUE_FLOOR_MARGIN_MS && empty <= latest - DUE_FLOOR_MARGIN_MS, `${empty}`);

  await claimTestEvent(t.pool, t.ledger, { source: "floor", id: "old" });
  await backdate("old", "1 hour");
  const stamped = await t.pool.query<{ at: Date }>(
    `select next_attempt_at as at from ${t.ledger.s}.events where dedupe_key = 'old'`,
  );
  assert.equal((await onClient(t, (c) => dueFloor(c, t.ledger))).getTime(), stamped.rows[0]?.at.getTime());
  await t.pool.query(`delete from ${t.ledger.s}.events where dedupe_key = 'old'`);
});

test("countAttempts with a floor leaves an event made due below it, and counts it from the next floor", async () => {
  const floor = await onClient(t, (c) => dueFloor(c, t.ledger));
  // Committed after the floor was taken, stamped a minute before it: a transaction that ran longer than the margin.
  await claimTestEvent(t.pool, t.ledger, { source: "floor", id: "late" });
  await backdate("late", "1 minute");
  assert.deepEqual(await onClient(t, (c) => countAttempts(c, t.ledger, policy, 50, floor)), []);
  const next = await onClient(t, (c) => dueFloor(c, t.ledger));
  assert.ok(next < floor);
  const counted = await onClient(t, (c) => countAttempts(c, t.ledger, policy, 50, next));
  assert.deepEqual(
    counted.map((k) => k.dedupe_key),
    ["late"],
  );
});

test("startWorker settles an event whose claim committed below the floor, once the next floor is taken", async () => {
  const settled = async (id: string) =>
    (
      await t.pool.query<{ status: string }>(
        `select status from ${t.ledger.s}.events where dedupe_key = $1::text`,
        [id],
      )
    ).rows[0]?.status === "settled";
  const handlers = new Handlers().on("slow", "test.event", () => {});
  const worker = startWorker({
    pool: t.newPool("work", 4),
    ledger: t.ledger,
    connectionString: testDatabaseUrl(),
    handlers,
    log: silentLogger(),
    pollIntervalMs: 100,
  });
  const claimer = await t.pool.connect();
  try {
    await claimTestEvent(t.pool, t.ledger, { source: "slow", id: "first" });
    await waitFor("the first event settled", () => settled("first"));
    // The claim's transaction stays open past a refresh and its margin: its stamp (its transaction's start) is then
    // below the floor the worker counts from when it commits.
    await claimer.query("begin");
    await claimTestEvent(claimer, t.ledger, { source: "slow", id: "held" });
    await sleep(FLOOR_REFRESH_MS + DUE_FLOOR_MARGIN_MS + 1000);
    await claimer.query("commit");
    await waitFor("the held claim's event settled", () => settled("held"), 60_000);
  } finally {
    await claimer.query("rollback").catch(() => {});
    claimer.release();
    await worker.stop();
  }
});
