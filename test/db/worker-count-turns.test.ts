import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { createPool, Handlers } from "hookledger";
import pg from "pg";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimNumbered, eventStates } from "../helpers/events.js";
import { withTestWorker } from "../helpers/worker.js";

// docs/architecture.md, "The slots of a worker count in turn": one worker's slots count their batches one at a time,
// a count that does not come back lets the next one start after 2 s, and counts of fewer than 8 events take no turn
// (src/worker/count-turns.ts).

let t: TestLedger;
let s: string;

before(async () => {
  t = await freshLedger();
  s = `"${t.schema}"`;
  await t.pool.query(`create table ${s}.applied (event_id text not null)`);
});

after(() => t.drop());

// The worker's counts waiting on a lock of this ledger's events table.
async function waitingCounts(): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
     where application_name = 'hookledger-work' and wait_event_type = 'Lock'
       and query like '%with due as%' and position($1 in query) > 0`,
    [`${s}.events`],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Six slots of one worker over 30 events of `source`, in batches of `batchSize`, while a share lock holds every count
 * at its update of events (the floor's read passes): `whileLocked` watches the counts, then the lock goes (inside the
 * worker's run whatever happens: a worker cannot stop while its counts wait on it) and every event must settle,
 * applied once.
 */
async function sixSlotsLocked(source: string, batchSize: number, whileLocked: () => Promise<void>) {
  await claimNumbered(t.pool, t.ledger, source, source, 30);
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await ctx.tx.query(`insert into ${s}.applied (event_id) values ($1)`, [ctx.event.id]);
  });
  const locker = new pg.Client({ connectionString: t.url });
  await locker.connect();
  await locker.query(`begin; lock table ${s}.events in share mode`);
  const pool = createPool({ connectionString: t.url, role: "work", max: 8 });
  try {
    await withTestWorker(t, pool, handlers, { concurrency: 6, batchSize, pollIntervalMs: 50 }, async () => {
      try {
        await waitFor("a count waiting on the lock", async () => (await waitingCounts()) >= 1, 10_000);
        await whileLocked();
      } finally {
        await locker.query("commit");
      }
      await waitFor("every event settled", async () => {
        const states = await eventStates(t.pool, t.ledger, source);
        return states.length === 30 && states.every((e) => e.status === "settled");
      });
    });
  } finally {
    await locker.end();
  }
  const { rows } = await t.pool.query<{ n: number }>(
    `select count(*)::int as n from ${s}.applied where event_id like $1 group by event_id`,
    [`${source}\\_%`],
  );
  assert.equal(rows.length, 30);
  assert.ok(
    rows.every((r) => r.n === 1),
    "each event applied once",
  );
}

test("startWorker with six slots counts batches of 10 one at a time, the next after 2 s when a count hangs; every event settles once", async () => {
  await sixSlotsLocked("turns", 10, async () => {
    // Six slots started at once; counting side by side, all six would be waiting by now.
    const seen: number[] = [];
    const until = Date.now() + 500;
    while (Date.now() < until) {
      seen.push(await waitingCounts());
      await sleep(25);
    }
    assert.equal(Math.max(...seen), 1, `counts waiting at once: ${seen.join(",")}`);
    await waitFor(
      "a second count, the first past its turn",
      async () => (await waitingCounts()) >= 2,
      10_000,
    );
  });
});

test("startWorker with six slots counts batches of 1 side by side (a turn per event would cost more than it saves)", async () => {
  // In turn, one more would start every 2 s: at most three by the deadline.
  await sixSlotsLocked("single", 1, () =>
    waitFor("six counts waiting at once", async () => (await waitingCounts()) === 6, 5000),
  );
});
