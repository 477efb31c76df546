import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type HandlerContext, Handlers } from "hookledger";
import pg from "pg";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimNumbered, type EventState, eventStates } from "../helpers/events.js";
import { withTestWorker } from "../helpers/worker.js";

// docs/architecture.md, "Batches": each event's arm (its savepoint and its mark) travels with its handler's first
// query, in the same round trip when pg sends that query in the extended protocol, else queued just before it.
// These tests hold the batch's answers to each way an arm can fail, met by each form of a first query.

let t: TestLedger;
let s: string;

before(async () => {
  t = await freshLedger();
  s = `"${t.schema}"`;
  await t.pool.query(`create table ${s}.applied (event_id text not null, attempt int not null)`);
});

after(() => t.drop());

/** Runs one worker with one slot on a pool of `max` connections until `done`; returns the pool's round trips. */
async function run(source: string, handlers: Handlers, done: () => Promise<boolean>): Promise<number> {
  let roundTrips = 0;
  const pool = new pg.Pool({ connectionString: t.url, max: 2 });
  pool.on("connect", (client) => {
    const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
    connection.on("readyForQuery", () => {
      roundTrips += 1;
    });
  });
  await withTestWorker(
    t,
    pool,
    handlers,
    {
      concurrency: 1,
      pollIntervalMs: 50,
      retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 20 },
      batchBudgetMs: 60_000,
    },
    () => waitFor(`${source} done`, done, 60_000),
  );
  return roundTrips;
}

const states = async (source: string) =>
  new Map(
    (await eventStates(t.pool, t.ledger, source)).map((r) => [r.dedupe_key, r] as [string, EventState]),
  );

async function writes(source: string): Promise<Map<string, number[]>> {
  const { rows } = await t.pool.query<{ event_id: string; attempt: number }>(
    `select event_id, attempt from ${s}.applied where event_id like $1 order by event_id, attempt`,
    [`${source}\\_%`],
  );
  const byEvent = new Map<string, number[]>();
  for (const r of rows) byEvent.set(r.event_id, [...(byEvent.get(r.event_id) ?? []), r.attempt]);
  return byEvent;
}

const settledAll = (source: string) => async () =>
  [...(await states(source)).values()].every((r) => ["settled", "dead"].includes(r.status));

type Ctx = HandlerContext;
const insert = () => `insert into ${s}.applied (event_id, attempt) values ($1, $2)`;

// Each form a handler's first query can take: only the first goes in the arm's round trip.
const FORMS = {
  parameterised: (ctx) => ctx.tx.query(insert(), [ctx.event.id, ctx.event.attempt]),
  text: (ctx) =>
    ctx.tx.query(
      `insert into ${s}.applied (event_id, attempt) values (${pg.escapeLiteral(ctx.event.id)}, ${ctx.event.attempt})`,
    ),
  named: (ctx) =>
    ctx.tx.query({ name: `arm-test-${t.schema}`, text: insert(), values: [ctx.event.id, ctx.event.attempt] }),
  callback: (ctx) =>
    new Promise((resolve, reject) => {
      (ctx.tx.query as (...a: unknown[]) => void)(
        insert(),
        [ctx.event.id, ctx.event.attempt],
        (error: Error | null, result: unknown) => (error ? reject(error) : resolve(result)),
      );
    }),
} satisfies Record<string, (ctx: Ctx) => Promise<unknown>>;

test("a batch of 40 events whose handlers make one parameterised query takes one round trip per event, not two", async () => {
  const ids = await claimNumbered(t.pool, t.ledger, "trips", "trips", 40);
  const handlers = new Handlers().on("trips", "*", async (ctx) => {
    await FORMS.parameterised(ctx);
  });
  const roundTrips = await run("trips", handlers, settledAll("trips"));
  for (const [id, row] of await states("trips"))
    assert.deepEqual([row.status, row.outcome, row.attempts], ["settled", "applied", 1], id);
  assert.deepEqual([...(await writes("trips")).keys()], ids);
  // 40 for the events; the rest is the batch's own statements (count, begin, lock, settle, commit) and the polls
  // before the worker stopped, more when the 40 are picked in two batches (60 seen once under Node 24 in CI). With
  // the arm in a round trip of its own it was 80 and more.
  assert.ok(roundTrips >= 40 && roundTrips < 75, `round trips: ${roundTrips}`);
});

for (const [form, first] of Object.entries(FORMS)) {
  test(`an arm that meets a transaction left aborted by the handler before it (first query ${form}): that handler's attempt fails, this event runs again and is applied once`, async () => {
    const source = `aborted${form}`;
    const ids = await claimNumbered(t.pool, t.ledger, source, source, 4);
    const [, culprit, next] = ids;
    const handlers = new Handlers().on(source, "*", async (ctx) => {
      await first(ctx);
      // Not awaited: the batch sees the transaction still open when this handler returns, and the next arm finds
      // it aborted.
      if (ctx.event.id === culprit && ctx.event.attempt === 1) ctx.tx.query("select 1 / 0").catch(() => {});
    });
    await run(source, handlers, settledAll(source));
    const rows = await states(source);
    for (const id of ids) {
      const row = rows.get(id);
      assert.deepEqual([row?.status, row?.outcome], ["settled", "applied"], id);
      // The culprit's first attempt failed; the next event was given back uncounted.
      assert.equal(row?.attempts, id === culprit ? 2 : 1, id);
    }
    const applied = await writes(source);
    assert.deepEqual(applied.get(culprit ?? ""), [2]);
    assert.deepEqual(applied.get(next ?? ""), [1]);
    assert.equal(applied.size, 4);
    const { rows: history } = await t.pool.query<{ error: string }>(
      `select error from ${t.ledger.s}.attempt_errors where dedupe_key = $1`,
      [culprit],
    );
    assert.match(history[0]?.error ?? "", /current transaction is aborted/);
  });

  test(`an arm that finds the batch's transaction ended and another begun (first query ${form}): the culprit and the events before it are dead, applied once; this event runs again, applied once`, async () => {
    const source = `reopened${form}`;
    const ids = await claimNumbered(t.pool, t.ledger, source, source, 4);
    const [before, culprit, next, last] = ids;
    const handlers = new Handlers().on(source, "*", async (ctx) => {
      await first(ctx);
      // A comment first gets past ctx.tx's check of the statement, and the connection is in a transaction again.
      if (ctx.event.id === culprit) await ctx.tx.query("/* x */ commit; begin");
    });
    await run(source, handlers, settledAll(source));
    const rows = await states(source);
    for (const id of [before, culprit]) assert.deepEqual([rows.get(id ?? "")?.status], ["dead"], id);
    for (const id of [next, last]) {
      const row = rows.get(id ?? "");
      assert.deepEqual([row?.status, row?.outcome, row?.attempts], ["settled", "applied", 1], id);
    }
    // What the culprit's commit made durable stays, once; the event after it wrote nothing that lasted before its
    // own run.
    const applied = await writes(source);
    for (const id of ids) assert.deepEqual(applied.get(id ?? ""), [1], id);
  });
}

test("handlers that make no query are never armed: one that returns settles, one that throws fails its attempt alone, the events around them keep their writes", async () => {
  const ids = await claimNumbered(t.pool, t.ledger, "idle", "idle", 5);
  const [, quiet, , thrower] = ids;
  const handlers = new Handlers().on("idle", "*", async (ctx) => {
    if (ctx.event.id === quiet) return;
    if (ctx.event.id === thrower && ctx.event.attempt === 1) throw new Error("no query yet");
    await FORMS.parameterised(ctx);
  });
  await run("idle", handlers, settledAll("idle"));
  const rows = await states("idle");
  for (const id of ids) {
    const row = rows.get(id ?? "");
    assert.deepEqual(
      [row?.status, row?.outcome, row?.attempts],
      ["settled", "applied", id === thrower ? 2 : 1],
      id,
    );
  }
  const applied = await writes("idle");
  assert.deepEqual(
    ids.map((id) => applied.get(id)),
    [[1], undefined, [1], [2], [1]],
  );
});

test("a first query the server refuses after the arm ran, or whose values cannot be sent, fails its own event alone", async () => {
  const ids = await claimNumbered(t.pool, t.ledger, "refused", "refused", 4);
  const [, syntax, , unsendable] = ids;
  const handlers = new Handlers().on("refused", "*", async (ctx) => {
    if (ctx.event.attempt === 1 && ctx.event.id === syntax) {
      await ctx.tx.query(`insert into ${s}.applied (event_id, attempt) valuez ($1, $2)`, [ctx.event.id, 1]);
    }
    if (ctx.event.attempt === 1 && ctx.event.id === unsendable) {
      const value = {
        toPostgres() {
          throw new Error("this value cannot be sent");
        },
      };
      await ctx.tx.query(insert(), [ctx.event.id, value]);
    }
    await FORMS.parameterised(ctx);
  });
  await run("refused", handlers, settledAll("refused"));
  const rows = await states("refused");
  for (const id of ids) {
    const row = rows.get(id);
    const failedOnce = id === syntax || id === unsendable;
    assert.deepEqual(
      [row?.status, row?.outcome, row?.attempts],
      ["settled", "applied", failedOnce ? 2 : 1],
      id,
    );
  }
  const applied = await writes("refused");
  assert.deepEqual(
    ids.map((id) => applied.get(id)),
    [[1], [2], [1], [2]],
  );
  const { rows: history } = await t.pool.query<{ dedupe_key: string; error: string }>(
    `select dedupe_key, error from ${t.ledger.s}.attempt_errors where dedupe_key like 'refused\\_%' order by 1`,
  );
  assert.deepEqual(
    history.map((h) => [h.dedupe_key, h.error.split("\n")[0]]),
    [
      [syntax, 'syntax error at or near "valuez"'],
      [unsendable, "this value cannot be sent"],
    ],
  );
  for (const { dedupe_key, error } of history) {
    assert.match(
      error,
      /\n {4}at .*worker-arm\.test\.ts:\d+:\d+\)/,
      `${dedupe_key}: the stack leads to the handler`,
    );
  }
});
