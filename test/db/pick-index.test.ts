import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { PoolClient } from "../../src/db/pool.js";
import { dueFloor } from "../../src/ledger/due-floor.js";
import { countAttempts } from "../../src/ledger/pick.js";
import { lockAttempts } from "../../src/ledger/pick-lock.js";
import { freshLedger, onClient, recordPlans, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

// docs/architecture.md §3: pending work is found through a partial index whose predicate is exactly the pick predicate, so
// the planner can use it (with sequential scans off it must, or the predicates have drifted apart).
const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };

async function plan(db: TestLedger, ...settings: string[]): Promise<string> {
  return planWithFloor(db, "-infinity", ...settings);
}

async function planWithFloor(db: TestLedger, floor: string, ...settings: string[]): Promise<string> {
  const client = await db.pool.connect();
  try {
    await client.query("begin");
    for (const setting of settings) await client.query(setting);
    // Prepared as the worker's statement is, so that plan_cache_mode decides between a custom and a generic plan.
    await client.query(`prepare pick as ${await pickSqlText(db)}`);
    const explained = await client.query(
      `explain execute pick (10, 1000, 1000, '%s', 2000, 30000, 50, 'ended', '${floor}')`,
    );
    await client.query("deallocate pick");
    return explained.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
  } finally {
    await client.query("rollback");
    client.release();
  }
}

test("the pick's query is answered from the events_due partial index", async () => {
  assert.match(await plan(t, "set local enable_seqscan = off"), /Index Scan using events_due/);
});

test("the pick with a floor (due-floor.ts) starts its walk of events_due there", async () => {
  const text = await planWithFloor(t, new Date().toISOString(), "set local enable_seqscan = off");
  assert.match(text, /Index Scan using events_due/);
  assert.match(text, /Index Cond: \(\(next_attempt_at <= now\(\)\) AND \(next_attempt_at >= /);
});

test("countAttempts on a ledger of one million rows, mostly settled, walks events_due and never scans the table", async () => {
  const big = await freshLedger();
  try {
    // 1,000,000 rows, 2,000 of them due: what a ledger looks like long after its events settled.
    await big.pool.query(
      `insert into ${big.ledger.s}.events (source, dedupe_key, event_type, body_sha256, status,
         outcome, settled_at, entity_type, entity_id, entity_version, next_attempt_at)
       select 'big', 'evt_' || i, 't', '\\x00', s, case when s = 'settled' then 'applied' end,
         case when s = 'settled' then now() end, 'sub', 'sub_' || (i % 5000), i,
         now() - interval '1 day' + i * interval '1 millisecond'
       from generate_series(1, 1000000) i,
         lateral (select case when i % 500 = 0 then 'pending' else 'settled' end as s) x`,
    );
    await big.pool.query(`analyze ${big.ledger.s}.events`);
    // The worker's statement is prepared: after five runs Postgres may plan it once for any parameters (generic),
    // where the batch size is unknown. Both plans must walk the index.
    for (const mode of ["force_custom_plan", "force_generic_plan"]) {
      const text = await plan(big, `set local plan_cache_mode = ${mode}`);
      assert.match(text, /Index Scan using events_due/, `${mode}:\n${text}`);
      assert.doesNotMatch(text, /Seq Scan on events/, `${mode}:\n${text}`);
    }
    // And it counts them: a batch of 50, oldest due first.
    const counted = await onClient(big, (c) => countAttempts(c, big.ledger, policy, 50));
    assert.equal(counted.length, 50);
    assert.deepEqual(
      counted.map((k) => Number(k.dedupe_key.slice(4))).sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => (i + 1) * 500),
    );
  } finally {
    await big.drop();
  }
});

test("countAttempts walks events_due in order when the statistics predate the backlog (a burst before ANALYZE)", async () => {
  const burst = await freshLedger();
  const client = await burst.pool.connect();
  try {
    // Analyzed while the ledger held 20,000 settled events and 40 due ones (autovacuum's ANALYZE in the middle of a
    // backlog's run); autovacuum then kept from analyzing the burst of 20,000 that follows. Due times in no order
    // of the table's, as after a worker's churn.
    await burst.pool.query(`alter table ${burst.ledger.s}.events set (autovacuum_enabled = false)`);
    const insert = (prefix: string, n: number, settled: boolean) =>
      burst.pool.query(
        `insert into ${burst.ledger.s}.events (source, dedupe_key, event_type, body_sha256, entity_type, entity_id,
           entity_version, next_attempt_at, status, outcome, settled_at)
         select 'burst', $1::text || i, 't', '\\x00', 'sub', 'sub_' || (i % 2000), i,
           now() - interval '1 hour' + random() * interval '1 hour',
           case when $3 then 'settled' else 'pending' end, case when $3 then 'applied' end,
           case when $3 then now() end
         from generate_series(1, $2::int) i`,
        [prefix, n, settled],
      );
    await insert("old_", 20_000, true);
    await insert("first_", 40, false);
    await burst.pool.query(`analyze ${burst.ledger.s}.events`);
    await insert("evt_", 20_000, false);
    const plans = await recordPlans(client);
    const oldest = await burst.pool.query<{ dedupe_key: string }>(
      `select dedupe_key from ${burst.ledger.s}.events where status = 'pending' order by next_attempt_at limit 50`,
    );
    const counted = await countAttempts(client, burst.ledger, policy, 50);
    assert.deepEqual(
      counted.map((k) => k.dedupe_key),
      oldest.rows.map((r) => r.dedupe_key),
    );
    const count = plans.find((p) => p.includes("with due as"));
    assert.ok(count, `no plan of the count among ${plans.length} notices`);
    // A bitmap scan reads all 20,000 due rows, sorts them and tries each one's entity lock; the index walk stops at 50.
    assert.match(count, /Index Scan using events_due/);
    assert.doesNotMatch(count, /Bitmap Heap Scan on events|Seq Scan on events/);
  } finally {
    client.release(true);
    await burst.drop();
  }
});

test("countAttempts from a floor reads a fraction of the pages it reads from the first entry while a snapshot is held", async () => {
  const held = await freshLedger();
  const holder = await held.pool.connect();
  const client = await held.pool.connect();
  try {
    // A transaction with an id holds the xmin horizon: the entries of the 5,000 settled events stay in events_due
    // (dead to every snapshot but its own) and an index walk from the first entry visits each of them.
    await holder.query("begin");
    await holder.query("select txid_current()");
    await held.pool.query(
      `insert into ${held.ledger.s}.events (source, dedupe_key, event_type, body_sha256, next_attempt_at)
       select 'held', 'old_' || i, 't', '\\x00', now() - interval '1 minute' + i * interval '1 millisecond'
       from generate_series(1, 5000) i`,
    );
    await held.pool.query(
      `update ${held.ledger.s}.events set status = 'settled', outcome = 'applied', settled_at = now()`,
    );
    for (let i = 0; i < 10; i++)
      await claimTestEvent(held.pool, held.ledger, { source: "held", id: `due_${i}` });
    const floor = await dueFloor(client, held.ledger);
    const pages = async (from: string) => {
      await client.query("begin");
      try {
        const { rows } = await client.query(
          `explain (analyze, buffers, format json) execute pick (10, 1000, 1000, '%s', 2000, 30000, 50, 'ended', '${from}')`,
        );
        const walk = findNode(rows[0]["QUERY PLAN"][0].Plan, (n) => n["Index Name"] === "events_due");
        assert.equal(walk?.["Actual Rows"], 10);
        return Number(walk?.["Shared Hit Blocks"] ?? 0) + Number(walk?.["Shared Read Blocks"] ?? 0);
      } finally {
        await client.query("rollback");
      }
    };
    await client.query(`prepare pick as ${await pickSqlText(held)}`);
    const fromFirst = await pages("-infinity");
    const fromFloor = await pages(floor.toISOString());
    await client.query("deallocate pick");
    assert.ok(
      fromFloor * 5 < fromFirst,
      `from the floor ${fromFloor} pages, from the first entry ${fromFirst}`,
    );
  } finally {
    await holder.query("rollback");
    holder.release();
    client.release();
    await held.drop();
  }
});

test("the pick skips events whose batch another transaction runs and counts the next", async () => {
  await claimTestEvent(t.pool, t.ledger, { id: "first" });
  await claimTestEvent(t.pool, t.ledger, { id: "second" });
  const a = await t.pool.connect();
  const b = await t.pool.connect();
  try {
    const first = await countAttempts(a, t.ledger, policy, 1);
    assert.equal(first.length, 1);
    // Due again at once, as when the running batch outlives its back-off: only its row locks keep it.
    await t.pool.query(`update ${t.ledger.s}.events set next_attempt_at = now() - interval '1 hour'`);
    await a.query("begin");
    assert.equal((await lockAttempts(a, t.ledger, first)).length, 1);
    await b.query("begin");
    const second = await countAttempts(b, t.ledger, policy, 50);
    assert.deepEqual(
      second.map((k) => k.dedupe_key),
      [first[0]?.dedupe_key === "first" ? "second" : "first"],
    );
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
  // Only what countAttempts calls: query. Its begin, commit and the count itself; the count is the one with a name.
  const recorder = {
    query: async (q: unknown) => {
      if (typeof q === "object" && q !== null && "text" in q) text = (q as { text: string }).text;
      return { rows: [], rowCount: 0 };
    },
  } as unknown as PoolClient;
  await countAttempts(recorder, ledger.ledger, policy, 50);
  return text;
}

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** The first node of an EXPLAIN (FORMAT JSON) plan, depth first, that `match` accepts. */
function findNode(node: PlanNode, match: (node: PlanNode) => boolean): PlanNode | undefined {
  if (match(node)) return node;
  for (const child of node.Plans ?? []) {
    const found = findNode(child, match);
    if (found) return found;
  }
  return undefined;
}
