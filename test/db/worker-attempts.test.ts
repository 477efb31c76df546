import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createPool, Handlers, type Pool } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { withTestWorker } from "../helpers/worker.js";

// docs/architecture.md §6: attempts are counted durably, whatever ends them, and one failing event never blocks the
// events behind it.

let t: TestLedger;
let s: string;

before(async () => {
  t = await freshLedger();
  s = `"${t.schema}"`;
  await t.pool.query(`create table ${s}.parent (id text primary key)`);
  await t.pool.query(`create table ${s}.child (
    event_id text not null,
    parent_id text not null constraint child_parent_fk references ${s}.parent (id) deferrable initially deferred)`);
  await t.pool.query(`create table ${s}.applied (event_id text not null, attempt int not null)`);
});

after(() => t.drop());

function withWorker(handlers: Handlers, body: () => Promise<void>): Promise<void> {
  const pool: Pool = createPool({ connectionString: t.url, role: "work", max: 4 });
  const retry = { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 400 };
  return withTestWorker(t, pool, handlers, { concurrency: 2, pollIntervalMs: 100, retry }, body);
}

async function statuses(source: string): Promise<Record<string, number>> {
  const { rows } = await t.pool.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from ${s}.events where source = $1 group by 1`,
    [source],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function row(source: string, id: string) {
  const { rows } = await t.pool.query<{ status: string; attempts: number; last_error: string | null }>(
    `select status, attempts, last_error from ${s}.events where source = $1 and dedupe_key = $2`,
    [source, id],
  );
  return rows[0];
}

test("an event whose transaction fails only at COMMIT is counted, goes dead after maxAttempts, and 50 events behind it settle", async () => {
  const source = "deferred";
  // The poisoned event is the oldest: before the fix it was picked first again after every back-off.
  await claimTestEvent(t.pool, t.ledger, { source, id: "d_poison" });
  for (let i = 0; i < 50; i++) await claimTestEvent(t.pool, t.ledger, { source, id: `d_good_${i}` });
  await t.pool.query(`insert into ${s}.parent (id) values ('exists')`);
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    // Accepted now, checked at COMMIT: only the poisoned event names a parent that does not exist.
    const parent = ctx.event.id === "d_poison" ? "missing" : "exists";
    await ctx.tx.query(`insert into ${s}.child (event_id, parent_id) values ($1, $2)`, [
      ctx.event.id,
      parent,
    ]);
  });
  await withWorker(handlers, () =>
    waitFor(
      "the poisoned event dead and the 50 others settled",
      async () => {
        const n = await statuses(source);
        return n.dead === 1 && n.settled === 50;
      },
      30_000,
    ),
  );

  const poison = await row(source, "d_poison");
  assert.equal(poison?.status, "dead");
  assert.equal(poison?.attempts, 3);
  assert.match(poison?.last_error ?? "", /child_parent_fk/);
  assert.match(poison?.last_error ?? "", /commit/i);
  const { rows } = await t.pool.query(
    `select count(*)::int as n, count(distinct event_id)::int as d from ${s}.child`,
  );
  assert.deepEqual(rows, [{ n: 50, d: 50 }]);
});

// docs/architecture.md "Choices": ctx.tx refuses to end the event's transaction, however the statement is spelled.
const SPELLINGS = {
  comment: "/* x */ commit",
  line: "-- x\ncommit",
  multi: "select 1; commit",
  rollback: "/* x */ rollback",
};

test("a handler that ends the event's transaction by any spelling, then throws, has its write applied at most once and fails clearly", async () => {
  const source = "spelled";
  for (const name of Object.keys(SPELLINGS)) await claimTestEvent(t.pool, t.ledger, { source, id: name });
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await ctx.tx.query(`insert into ${s}.applied (event_id, attempt) values ($1, $2)`, [
      ctx.event.id,
      ctx.event.attempt,
    ]);
    await ctx.tx.query(SPELLINGS[ctx.event.id as keyof typeof SPELLINGS]).catch(() => {});
    throw new Error(`thrown after ${ctx.event.id}`);
  });
  const writes = async () => {
    const { rows } = await t.pool.query<{ event_id: string; n: number }>(
      `select event_id, count(*)::int as n from ${s}.applied group by 1`,
    );
    return Object.fromEntries(rows.map((r) => [r.event_id, r.n]));
  };
  await withWorker(handlers, () =>
    waitFor(
      "every event ended (or a write applied twice)",
      async () => (await statuses(source)).dead === 4 || Object.values(await writes()).some((n) => n > 1),
      30_000,
    ),
  );

  const applied = await writes();
  for (const name of Object.keys(SPELLINGS)) {
    assert.ok((applied[name] ?? 0) <= 1, `${name}: applied ${applied[name]} times`);
    const r = await row(source, name);
    assert.equal(r?.status, "dead", name);
    assert.ok((r?.attempts ?? 0) >= 1, `${name}: attempts ${r?.attempts}`);
    assert.match(r?.last_error ?? "", /handler ended the event's transaction/, name);
  }
});

// A string that ends the transaction and opens another leaves the connection in a transaction, so the status check
// after each query cannot see it; the settle checks that it runs in the transaction the attempt began.
const REOPENED = { rollbackBegin: "/* x */ rollback; begin", commitBegin: "/* x */ commit; begin" };

test("a handler that ends the event's transaction and begins another, then returns, settles nothing and fails clearly", async () => {
  const source = "reopened";
  for (const name of Object.keys(REOPENED)) await claimTestEvent(t.pool, t.ledger, { source, id: name });
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    const write = (step: string) =>
      ctx.tx.query(`insert into ${s}.applied (event_id, attempt) values ($1, $2)`, [
        `${ctx.event.id}:${step}`,
        ctx.event.attempt,
      ]);
    await write("before");
    await ctx.tx.query(REOPENED[ctx.event.id as keyof typeof REOPENED]);
    await write("after");
  });
  await withWorker(handlers, () =>
    waitFor(
      "both events ended",
      async () => {
        const counts = await statuses(source);
        return (counts.dead ?? 0) + (counts.settled ?? 0) === 2;
      },
      30_000,
    ),
  );
  const { rows } = await t.pool.query<{ event_id: string }>(`select event_id from ${s}.applied order by 1`);
  const applied = rows.map((r) => r.event_id).filter((id) => id.includes(":"));
  // Only what the handler itself committed before opening a new transaction remains; nothing after it.
  assert.deepEqual(applied, ["commitBegin:before"]);
  for (const name of Object.keys(REOPENED)) {
    const r = await row(source, name);
    assert.equal(r?.status, "dead", `${name}: ${JSON.stringify(r)}`);
    assert.match(r?.last_error ?? "", /handler ended the event's transaction/, name);
  }
});
