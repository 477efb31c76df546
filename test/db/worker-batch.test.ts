import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { type AttemptReport, createPool, Handlers, type Pool, type Worker } from "hookledger";
import pg from "pg";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimNumbered, type EventState, eventStates } from "../helpers/events.js";
import { type TestWorkerOptions, withTestWorker } from "../helpers/worker.js";

// docs/architecture.md §6 and "Batches": a worker runs due events in batches, one transaction each, every event in a
// savepoint of its own; a failing handler rolls back only its own writes, and a handler that ends the transaction
// itself leaves dead only the events whose writes it may have committed.

let t: TestLedger;
let s: string;

before(async () => {
  t = await freshLedger();
  s = `"${t.schema}"`;
  // xid: the transaction that wrote the row, so the test can tell which events ran in one batch.
  await t.pool.query(`create table ${s}.applied (event_id text not null, attempt int not null, note text,
    xid text not null default pg_current_xact_id()::text)`);
});

after(() => t.drop());

/**
 * One worker with one slot and a budget no batch reaches, so that every due event is in its first batch; on a work
 * pool of hookledger's unless `pool` is given (it is ended afterwards all the same).
 */
function withWorker(
  handlers: Handlers,
  extra: TestWorkerOptions,
  body: (worker: Worker) => Promise<void>,
  pool: Pool = createPool({ connectionString: t.url, role: "work", max: 3 }),
) {
  const options: TestWorkerOptions = {
    concurrency: 1,
    pollIntervalMs: 50,
    retry: { maxAttempts: 3, baseDelayMs: 60_000, maxDelayMs: 60_000 },
    batchBudgetMs: 60_000,
    ...extra,
  };
  return withTestWorker(t, pool, handlers, options, body);
}

// Each test claims under a source of its own, ids prefixed with the source.
const claim = (source: string, count: number) => claimNumbered(t.pool, t.ledger, source, source, count);

async function rows(source: string): Promise<Map<string, EventState>> {
  return new Map((await eventStates(t.pool, t.ledger, source)).map((r) => [r.dedupe_key, r]));
}

async function writes(source: string): Promise<Map<string, string[]>> {
  const { rows } = await t.pool.query<{ event_id: string; note: string | null }>(
    `select event_id, note from ${s}.applied where event_id like $1 order by event_id, note`,
    [`${source}\\_%`],
  );
  const byEvent = new Map<string, string[]>();
  for (const r of rows) byEvent.set(r.event_id, [...(byEvent.get(r.event_id) ?? []), r.note ?? ""]);
  return byEvent;
}

/** Events written per transaction (the applied rows' xid). */
async function batches(source: string): Promise<Map<string, number>> {
  const { rows } = await t.pool.query<{ xid: string; n: number }>(
    `select xid, count(*)::int as n from ${s}.applied where event_id like $1 group by 1`,
    [`${source}\\_%`],
  );
  return new Map(rows.map((r) => [r.xid, r.n]));
}

const unsettled = async (source: string) =>
  [...(await rows(source)).values()].filter((r) => r.status !== "settled").length;

function write(ctx: Parameters<Parameters<Handlers["on"]>[2]>[0], note?: string) {
  return ctx.tx.query(`insert into ${s}.applied (event_id, attempt, note) values ($1, $2, $3)`, [
    ctx.event.id,
    ctx.event.attempt,
    note ?? null,
  ]);
}

test("a handler that throws in a batch of 50: the 49 others settle applied in one commit with their writes, the one fails with its error and its write rolled back", async () => {
  const ids = await claim("fifty", 50);
  const reports: AttemptReport[] = [];
  const handlers = new Handlers().on("fifty", "*", async (ctx) => {
    await write(ctx);
    if (ctx.event.id === "fifty_17") throw new Error("fifty_17 refuses");
  });
  await withWorker(handlers, { onAttempt: (r) => reports.push(r) }, () =>
    waitFor("50 events ended", async () => (await unsettled("fifty")) === 1 && reports.length === 50),
  );

  const ledger = await rows("fifty");
  const failed = ledger.get("fifty_17");
  assert.deepEqual(
    { ...failed, last_error: failed?.last_error?.split("\n")[0] },
    {
      dedupe_key: "fifty_17",
      status: "failed",
      outcome: null,
      attempts: 1,
      last_error: "fifty_17 refuses",
      settled_at: null,
    },
  );
  const settled = ids.filter((id) => id !== "fifty_17").map((id) => ledger.get(id));
  for (const row of settled)
    assert.deepEqual([row?.status, row?.outcome, row?.attempts], ["settled", "applied", 1]);
  // One transaction for all 49.
  assert.deepEqual([...(await batches("fifty")).values()], [49]);
  const applied = await writes("fifty");
  assert.deepEqual(
    [...applied.keys()],
    ids.filter((id) => id !== "fifty_17"),
  );
  for (const notes of applied.values()) assert.equal(notes.length, 1);
  assert.deepEqual(reports.map((r) => r.result).sort(), [...Array(49).fill("settled"), "failed"].sort());
  // The settle deleted the batch's row of marks (arm.ts) in its transaction: none was committed.
  assert.equal(await marks(), 0);
});

const marks = async () =>
  (await t.pool.query<{ n: number }>(`select count(*)::int as n from ${t.ledger.s}.batch_marks`)).rows[0]?.n;

// docs/architecture.md, "Failure, retry, dead": a handler that ends the transaction leaves dead the events whose
// writes that may have committed; the batch gives back the events its commit or rollback did not make durable.
const ENDINGS = {
  commit: "/* x */ commit",
  reopened: "/* x */ commit; begin",
  rollback: "select 1; rollback",
};

for (const [ending, sql] of Object.entries(ENDINGS)) {
  test(`a handler that ends its batch's transaction (${ending}): the events before it ${ending === "rollback" ? "are given back and settle" : "are dead, applied once"}, the events after it are given back uncounted and settle`, async () => {
    const source = `ended${ending}`;
    const ids = await claim(source, 10);
    const culprit = `${source}_04`;
    const handlers = new Handlers().on(source, "*", async (ctx) => {
      await write(ctx, "before");
      if (ctx.event.id !== culprit) return;
      await ctx.tx.query(sql).catch(() => {});
      await write(ctx, "after").catch(() => {});
    });
    await withWorker(handlers, {}, () =>
      waitFor("every event ended", async () =>
        [...(await rows(source)).values()].every((r) => ["settled", "dead"].includes(r.status)),
      ),
    );

    const ledger = await rows(source);
    const applied = await writes(source);
    const before = ids.slice(0, 4);
    const afterIt = ids.slice(5);
    const culpritRow = ledger.get(culprit);
    assert.equal(culpritRow?.status, "dead");
    assert.equal(culpritRow?.attempts, 1);
    assert.match(culpritRow?.last_error ?? "", /^the handler ended the event's transaction/);
    // Whatever it wrote before ending the transaction lasts only if it committed; nothing after it.
    assert.deepEqual(applied.get(culprit), ending === "rollback" ? undefined : ["before"]);
    for (const id of before) {
      const row = ledger.get(id);
      if (ending === "rollback") {
        // Rolled back with the batch: given back, run again in a later batch, applied once.
        assert.deepEqual([row?.status, row?.outcome, row?.attempts], ["settled", "applied", 1], id);
      } else {
        // Committed by the culprit without a settle: not retried, and its write is there once.
        assert.deepEqual([row?.status, row?.attempts], ["dead", 1], id);
        assert.match(row?.last_error ?? "", /a handler of its batch ended the transaction/, id);
      }
      assert.deepEqual(applied.get(id), ["before"], id);
    }
    for (const id of afterIt) {
      const row = ledger.get(id);
      assert.deepEqual(
        [row?.status, row?.outcome, row?.attempts, row?.last_error],
        ["settled", "applied", 1, null],
      );
      assert.deepEqual(applied.get(id), ["before"], id);
    }
    // Each event made dead is in the attempt history, under its one attempt.
    const { rows: history } = await t.pool.query<{ dedupe_key: string; attempt: number }>(
      `select dedupe_key, attempt from ${t.ledger.s}.attempt_errors
       where dedupe_key like $1 and error like 'a handler of its batch ended%' order by 1`,
      [`${source}\\_%`],
    );
    assert.deepEqual(
      history.map((h) => [h.dedupe_key, h.attempt]),
      ending === "rollback" ? [] : before.map((id) => [id, 1]),
    );
    // The committed row of marks went once its events were made dead.
    assert.equal(await marks(), 0);
  });
}

// The string `commit; begin` leaves the connection in a transaction, so the status check cannot see the commit; the
// handler then hangs past its timeout. The timeout's failure must not make a retry of what that commit made durable.
test("a handler that commits its batch's transaction and begins another, then hangs past its timeout: it and the events before it are dead, applied once; the events after it settle", async () => {
  const ids = await claim("reopenhung", 6);
  const culprit = "reopenhung_02";
  const handlers = new Handlers().on("reopenhung", "*", async (ctx) => {
    await write(ctx, "before");
    if (ctx.event.id !== culprit) return;
    await ctx.tx.query("/* x */ commit; begin");
    await sleep(2000);
  });
  await withWorker(handlers, { handlerTimeoutMs: 300, retry: { baseDelayMs: 50, maxDelayMs: 50 } }, () =>
    waitFor("every event ended", async () =>
      [...(await rows("reopenhung")).values()].every((r) => ["settled", "dead"].includes(r.status)),
    ),
  );
  const ledger = await rows("reopenhung");
  for (const id of ids.slice(0, 3))
    assert.deepEqual([ledger.get(id)?.status, ledger.get(id)?.attempts], ["dead", 1], id);
  for (const id of ids.slice(3)) {
    assert.deepEqual(
      [ledger.get(id)?.status, ledger.get(id)?.outcome, ledger.get(id)?.attempts],
      ["settled", "applied", 1],
      id,
    );
  }
  const applied = await writes("reopenhung");
  for (const id of ids) assert.deepEqual(applied.get(id), ["before"], id);
  assert.equal(await marks(), 0);
});

test("a batch's time budget: no event starts after it, the rest are given back uncounted and settle in later batches", async () => {
  const ids = await claim("budget", 24);
  const handlers = new Handlers().on("budget", "*", async (ctx) => {
    await write(ctx);
    await sleep(100);
  });
  await withWorker(handlers, { batchBudgetMs: 250 }, () =>
    waitFor("24 events settled", async () => (await unsettled("budget")) === 0, 60_000),
  );
  for (const row of (await rows("budget")).values()) {
    assert.deepEqual([row.status, row.outcome, row.attempts], ["settled", "applied", 1], row.dedupe_key);
  }
  // Each handler takes at least 100 ms, so a batch reaches its 250 ms budget within its third event.
  const sizes = [...(await batches("budget")).values()];
  assert.ok(Math.max(...sizes) <= 3, `batch sizes ${sizes}`);
  assert.deepEqual([...(await writes("budget")).keys()], ids);
});

test("a handler past its timeout in a batch: it fails, the batch rolls back and the others are given back uncounted, applied once", async () => {
  const ids = await claim("hung", 8);
  const handlers = new Handlers().on("hung", "*", async (ctx) => {
    await write(ctx);
    if (ctx.event.id === "hung_03" && ctx.event.attempt === 1) await sleep(2000);
  });
  await withWorker(handlers, { handlerTimeoutMs: 300, retry: { baseDelayMs: 50, maxDelayMs: 50 } }, () =>
    waitFor("8 events settled", async () => (await unsettled("hung")) === 0),
  );
  const ledger = await rows("hung");
  for (const id of ids) {
    const row = ledger.get(id);
    // hung_03 spent one attempt on its timeout; the others' attempts were given back when the batch rolled back.
    assert.deepEqual(
      [row?.status, row?.outcome, row?.attempts],
      ["settled", "applied", id === "hung_03" ? 2 : 1],
    );
  }
  const applied = await writes("hung");
  assert.deepEqual([...applied.keys()], ids);
  for (const [id, notes] of applied) assert.equal(notes.length, 1, id);
});

test("stop() mid-batch: the batch starts no new event, commits those that ran and gives the rest back uncounted", async () => {
  await claim("stopping", 20);
  let entered = 0;
  const handlers = new Handlers().on("stopping", "*", async (ctx) => {
    entered++;
    await write(ctx);
    await sleep(150);
  });
  await withWorker(handlers, {}, async (worker) => {
    await waitFor("the batch under way", async () => entered >= 2);
    await worker.stop(10_000);
  });
  const ledger = [...(await rows("stopping")).values()];
  const settled = ledger.filter((r) => r.status === "settled");
  const rest = ledger.filter((r) => r.status !== "settled");
  assert.ok(settled.length >= 2 && settled.length < 20, `settled ${settled.length}`);
  assert.equal(settled.length, entered);
  for (const row of rest) assert.deepEqual([row.status, row.attempts], ["pending", 0], row.dedupe_key);
  assert.equal((await writes("stopping")).size, settled.length);
});

test("a handler that deallocates the session's prepared statements fails its batch like a lost connection: nothing dead, each event applied once", async () => {
  const ids = await claim("dealloc", 6);
  const handlers = new Handlers().on("dealloc", "*", async (ctx) => {
    await write(ctx);
    if (ctx.event.id === "dealloc_02" && ctx.event.attempt === 1) await ctx.tx.query("deallocate all");
  });
  await withWorker(handlers, {}, () =>
    waitFor("6 events settled", async () => (await unsettled("dealloc")) === 0, 60_000),
  );
  for (const row of (await rows("dealloc")).values()) {
    // The batch rolled back with its attempts counted: each event then ran alone.
    assert.deepEqual([row.status, row.outcome, row.attempts], ["settled", "applied", 2], row.dedupe_key);
  }
  const applied = await writes("dealloc");
  assert.deepEqual([...applied.keys()], ids);
  for (const [id, notes] of applied) assert.equal(notes.length, 1, id);
});

test("a batch locks its events with a generic plan, and its handlers get the session's own plan_cache_mode back", async () => {
  await claim("plans", 12);
  const seen: { mode: string; lockGeneric: number }[] = [];
  const handlers = new Handlers().on("plans", "*", async (ctx) => {
    const { rows } = await ctx.tx.query<{ mode: string; lock_generic: number }>(
      `select current_setting('plan_cache_mode') as mode,
        (select coalesce(sum(generic_plans), 0)::int from pg_prepared_statements where name like '%.pick-lock')
          as lock_generic`,
    );
    seen.push({ mode: rows[0]?.mode ?? "", lockGeneric: rows[0]?.lock_generic ?? -1 });
  });
  // The app's own pool, whose sessions force custom plans.
  const pool = new pg.Pool({
    connectionString: t.url,
    max: 3,
    options: "-c plan_cache_mode=force_custom_plan",
  });
  await withWorker(
    handlers,
    { batchSize: 4 },
    () => waitFor("12 events settled", async () => (await unsettled("plans")) === 0, 60_000),
    pool,
  );
  assert.equal(seen.length, 12);
  assert.deepEqual(new Set(seen.map((s) => s.mode)), new Set(["force_custom_plan"]));
  assert.ok(
    seen.every((s) => s.lockGeneric >= 1),
    `every batch's lock planned generically: ${JSON.stringify(seen)}`,
  );
});
