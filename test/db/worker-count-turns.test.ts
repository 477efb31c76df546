import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { createPool, Handlers } from "hookledger";
import pg from "pg";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimNumbered, eventStates } from "../helpers/events.js";
import { withTestWorker } from "../helpers/worker.js";

// docs/architecture.md, "The slots of a worker count in turn": one worker's slots count their batches one at a time,
// and a count that does not come back lets the next one start after 2 s (src/worker/count-turns.ts).

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

test("startWorker with six slots counts one batch at a time, the next after 2 s when a count hangs; every event settles once", async () => {
  await claimNumbered(t.pool, t.ledger, "turns", "turns", 30);
  const handlers = new Handlers().on("turns", "*", async (ctx) => {
    await ctx.tx.query(`insert into ${s}.applied (event_id) values ($1)`, [ctx.event.id]);
  });
  // A share lock lets the floor's read through and holds every count at its update of events. It is let go inside
  // the worker's run whatever happens: a worker cannot stop while its counts wait on it.
  const locker = new pg.Client({ connectionString: t.url });
  await locker.connect();
  await locker.query(`begin; lock table ${s}.events in share mode`);
  const pool = createPool({ connectionString: t.url, role: "work", max: 8 });
  try {
    await withTestWorker(
      t,
      pool,
      handlers,
      { concurrency: 6, batchSize: 5, pollIntervalMs: 50 },
      async () => {
        try {
          await waitFor("a count waiting on the lock", async () => (await waitingCounts()) >= 1, 10_000);
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
        } finally {
          await locker.query("commit");
        }
        await waitFor("every event settled", async () => {
          const states = await eventStates(t.pool, t.ledger, "turns");
          return states.length === 30 && states.every((e) => e.status === "settled");
        });
      },
    );
  } finally {
    await locker.end();
  }
  const { rows } = await t.pool.query<{ event_id: string; n: number }>(
    `select event_id, count(*)::int as n from ${s}.applied group by 1`,
  );
  assert.equal(rows.length, 30);
  assert.ok(
    rows.every((r) => r.n === 1),
    "each event applied once",
  );
});
