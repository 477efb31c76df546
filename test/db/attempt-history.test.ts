import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { failEvent } from "../../src/ledger/fail.js";
import { countAttempts } from "../../src/ledger/pick.js";
import { lockAttempts } from "../../src/ledger/pick-lock.js";
import { settleAttempts } from "../../src/ledger/settle.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

// The attempt history (attempt_errors, docs/dashboard.md) is written by the statements that end an attempt with an
// error. These pin what the ledger's own statements record; test/db/dashboard.test.ts reads it through the API.
let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };

async function history(key: string): Promise<{ attempt: number; error: string }[]> {
  const { rows } = await t.pool.query<{ attempt: number; error: string }>(
    `select attempt, error from ${t.ledger.s}.attempt_errors where dedupe_key = $1 order by attempt, failed_at`,
    [key],
  );
  return rows;
}

test("failEvent records the attempt it closes; a batch that gives the event back later adds no record", async () => {
  await claimTestEvent(t.pool, t.ledger, { id: "evt_given_back" });
  const client = await t.pool.connect();
  try {
    const [first] = await countAttempts(client, t.ledger, policy, 1);
    assert.equal(first?.attempts, 1);
    const status = await failEvent(t.pool, t.ledger, {
      source: "test",
      dedupeKey: "evt_given_back",
      error: "attempt 1 broke",
      maxAttempts: 10,
      retryInMs: 0,
      attempts: 1,
    });
    assert.equal(status, "failed");
    assert.deepEqual(await history("evt_given_back"), [{ attempt: 1, error: "attempt 1 broke" }]);

    // Attempt 2 is counted, locked by a batch, and given back unrun (its budget ran out, say): nothing happened.
    const [second] = await countAttempts(client, t.ledger, policy, 1);
    assert.ok(second);
    assert.equal(second.attempts, 2);
    await client.query("begin");
    const { rows } = await client.query<{ xid: string }>("select pg_current_xact_id()::text as xid");
    assert.equal((await lockAttempts(client, t.ledger, [second])).length, 1);
    const xid = rows[0]?.xid ?? "";
    assert.ok(
      await settleAttempts(
        client,
        t.ledger,
        [{ source: "test", dedupe_key: "evt_given_back", outcome: null }],
        xid,
        second.batch,
      ),
    );
    await client.query("commit");
  } finally {
    client.release();
  }
  const { rows } = await t.pool.query(
    `select status, attempts, last_error from ${t.ledger.s}.events where dedupe_key = 'evt_given_back'`,
  );
  assert.deepEqual(rows, [{ status: "failed", attempts: 1, last_error: "attempt 1 broke" }]);
  assert.deepEqual(await history("evt_given_back"), [{ attempt: 1, error: "attempt 1 broke" }]);
});

test("a failure recorded late, for an attempt no longer on the row, changes nothing and records nothing", async () => {
  await claimTestEvent(t.pool, t.ledger, { id: "evt_late" });
  const client = await t.pool.connect();
  try {
    await countAttempts(client, t.ledger, policy, 1);
  } finally {
    client.release();
  }
  const status = await failEvent(t.pool, t.ledger, {
    source: "test",
    dedupeKey: "evt_late",
    error: "from a stale worker",
    maxAttempts: 10,
    retryInMs: 0,
    attempts: 7,
  });
  assert.equal(status, undefined);
  assert.deepEqual(await history("evt_late"), []);
});
