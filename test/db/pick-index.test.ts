import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { countAttempt, lockAttempt } from "../../src/ledger/pick.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

// docs/architecture.md §3: pending work is found through a partial index whose predicate is exactly the pick predicate, so
// the planner can use it (with sequential scans off it must, or the predicates have drifted apart).
const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };

test("the pick's query is answered from the events_due partial index", async () => {
  const client = await t.pool.connect();
  try {
    await client.query("begin");
    await client.query("set local enable_seqscan = off");
    const plan = await client.query(`explain ${await pickSqlText(t)}`, [10, 1000, 1000, "%s", 2000, 30000]);
    const text = plan.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
    assert.match(text, /Index Scan using events_due/);
  } finally {
    await client.query("rollback");
    client.release();
  }
});

test("the pick skips an event whose attempt another transaction runs and takes the next", async () => {
  await claimTestEvent(t.pool, t.ledger, { id: "first" });
  await claimTestEvent(t.pool, t.ledger, { id: "second" });
  const a = await t.pool.connect();
  const b = await t.pool.connect();
  try {
    const first = await countAttempt(a, t.ledger, policy);
    assert.ok(first?.kind === "attempt");
    // Due again at once, as when the running attempt outlives its back-off: only its row lock keeps it.
    await t.pool.query(`update ${t.ledger.s}.events set next_attempt_at = now() - interval '1 hour'`);
    await a.query("begin");
    assert.equal(await lockAttempt(a, t.ledger, first.event), "locked");
    await b.query("begin");
    const second = await countAttempt(b, t.ledger, policy);
    assert.ok(second?.kind === "attempt");
    assert.notEqual(first.event.dedupe_key, second.event.dedupe_key);
  } finally {
    await a.query("rollback");
    await b.query("rollback");
    a.release();
    b.release();
  }
});

/** The SQL text the pick sends, captured without running it. */
async function pickSqlText(ledger: TestLedger): Promise<string> {
  let text = "";
  await countAttempt(
    {
      query: async (q: unknown) => {
        text = (q as { text: string }).text;
        return { rows: [], rowCount: 0 };
      },
    },
    ledger.ledger,
    policy,
  );
  return text;
}
