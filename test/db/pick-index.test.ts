import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { pickEvent } from "../../src/ledger/pick.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

// docs/architecture.md §3: pending work is found through a partial index whose predicate is exactly the pick predicate, so
// the planner can use it (with sequential scans off it must, or the predicates have drifted apart).
test("pickEvent's query is answered from the events_due partial index", async () => {
  const client = await t.pool.connect();
  try {
    await client.query("begin");
    await client.query("set local enable_seqscan = off");
    const plan = await client.query(`explain ${await pickSqlText(t)}`);
    const text = plan.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
    assert.match(text, /Index Scan using events_due/);
  } finally {
    await client.query("rollback");
    client.release();
  }
});

test("pickEvent skips an event locked by another transaction and takes the next", async () => {
  await claimTestEvent(t.pool, t.ledger, { id: "first" });
  await claimTestEvent(t.pool, t.ledger, { id: "second" });
  const a = await t.pool.connect();
  const b = await t.pool.connect();
  try {
    await a.query("begin");
    await b.query("begin");
    const first = await pickEvent(a, t.ledger);
    const second = await pickEvent(b, t.ledger);
    assert.ok(first && second);
    assert.notEqual(first.dedupe_key, second.dedupe_key);
  } finally {
    await a.query("rollback");
    await b.query("rollback");
    a.release();
    b.release();
  }
});

/** The SQL text pickEvent sends, captured without running it. */
async function pickSqlText(ledger: TestLedger): Promise<string> {
  let text = "";
  await pickEvent(
    {
      query: async (q: unknown) => {
        text = (q as { text: string }).text;
        return { rows: [], rowCount: 0 };
      },
    },
    ledger.ledger,
  );
  return text;
}
