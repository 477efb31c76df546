// runHandler: one handler, the worker's context, a real migrated ledger, and nothing left behind.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Handler } from "hookledger";
import { runHandler, type TestEvent } from "hookledger/testing";
import { freshLedger, type TestLedger } from "../helpers/db.js";

let t: TestLedger;
let audit: string;

before(async () => {
  t = await freshLedger();
  audit = `${t.ledger.s}.audit`;
  await t.pool.query(`create table ${audit} (event_id text primary key, status text)`);
});

after(async () => {
  await t?.drop();
});

const event = (version: number): TestEvent<{ status: string }> => ({
  source: "stripe",
  type: "customer.subscription.updated",
  id: `evt_v${version}`,
  payload: { status: "active" },
  entity: { type: "subscription", id: "sub_1", version },
});

const applySubscription: Handler<{ status: string }> = async (ctx) => {
  if (!(await ctx.advance())) return;
  await ctx.tx.query(`insert into ${audit} (event_id, status) values ($1, $2)`, [
    ctx.event.id,
    ctx.event.payload.status,
  ]);
};

const auditRows = async (db: { query: TestLedger["pool"]["query"] }) =>
  (await db.query<{ event_id: string }>(`select event_id from ${audit} order by 1`)).rows.map(
    (r) => r.event_id,
  );
const versions = async (db: { query: TestLedger["pool"]["query"] }) =>
  (await db.query<{ version: string }>(`select version::text from ${t.ledger.s}.entity_versions`)).rows;

test("runHandler: applied, its writes and the guard visible to inspect, then rolled back", async () => {
  const result = await runHandler(applySubscription, {
    pool: t.pool,
    schema: t.schema,
    event: event(100),
    inspect: async (tx) => ({ audit: await auditRows(tx), versions: await versions(tx) }),
  });
  assert.equal(result.outcome, "applied");
  assert.deepEqual(result.inspected, { audit: ["evt_v100"], versions: [{ version: "100" }] });
  assert.deepEqual(await auditRows(t.pool), []);
  assert.deepEqual(await versions(t.pool), []);
});

test("runHandler: stale when a newer version was applied first, and the handler's write is skipped", async () => {
  await t.pool.query(
    `insert into ${t.ledger.s}.entity_versions (entity_type, entity_id, version, source, dedupe_key)
     values ('subscription', 'sub_1', 200, 'stripe', 'evt_v200')`,
  );
  try {
    const result = await runHandler(applySubscription, {
      connectionString: t.url,
      schema: t.schema,
      event: event(150),
      inspect: (tx) => auditRows(tx),
    });
    assert.equal(result.outcome, "stale");
    assert.deepEqual(result.inspected, []);
    const newer = await runHandler(applySubscription, { pool: t.pool, schema: t.schema, event: event(250) });
    assert.equal(newer.outcome, "applied");
  } finally {
    await t.pool.query(`delete from ${t.ledger.s}.entity_versions`);
  }
});

test("runHandler: ignored when the handler calls ctx.ignore()", async () => {
  const result = await runHandler((ctx) => ctx.ignore(), { pool: t.pool, schema: t.schema, event: event(1) });
  assert.equal(result.outcome, "ignored");
});

test("runHandler: threw, with its writes rolled back before inspect, as the worker does", async () => {
  const result = await runHandler(
    async (ctx) => {
      await ctx.tx.query(`insert into ${audit} (event_id) values ($1)`, [ctx.event.id]);
      throw new Error("downstream API said 500");
    },
    { pool: t.pool, schema: t.schema, event: event(1), inspect: (tx) => auditRows(tx) },
  );
  assert.equal(result.outcome, "threw");
  assert.ok(result.outcome === "threw" && /downstream API said 500/.test(result.error.message));
  assert.deepEqual(result.inspected, []);
});

test("runHandler: ctx.tx refuses to commit, as in the worker, and the event attempt and id are the test's", async () => {
  let seen: { id: string; attempt: number } | undefined;
  const result = await runHandler(
    async (ctx) => {
      seen = { id: ctx.event.id, attempt: ctx.event.attempt };
      await ctx.tx.query("commit");
    },
    { pool: t.pool, schema: t.schema, event: { ...event(1), attempt: 3 } },
  );
  assert.deepEqual(seen, { id: "evt_v1", attempt: 3 });
  assert.ok(result.outcome === "threw" && /must not begin, commit or roll back/.test(result.error.message));
  assert.equal((await t.pool.query("select 1")).rowCount, 1, "the pool still works");
});
