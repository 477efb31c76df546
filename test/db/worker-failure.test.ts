import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPool, type Pool } from "hookledger";
import { silentLogger } from "hookledger";
import { Handlers } from "hookledger";
import { startWorker, type Worker, type WorkerOptions } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
let applied: string;

before(async () => {
  t = await freshLedger();
  applied = `"${t.schema}".applied`;
  await t.pool.query(`create table ${applied} (event_id text not null, attempt int not null, note text)`);
});

after(() => t.drop());

type Extra = Partial<Omit<WorkerOptions, "pool" | "connectionString" | "ledger" | "handlers" | "log">>;

/** Runs `body` with one worker on its own `work` pool, stopping it and closing the pool afterwards. */
async function withWorker(handlers: Handlers, extra: Extra, body: () => Promise<void>): Promise<void> {
  const pool: Pool = createPool({ connectionString: t.url, role: "work", max: 4 });
  const worker: Worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers,
    log: silentLogger(),
    concurrency: 2,
    pollIntervalMs: 100,
    retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 50 },
    ...extra,
  });
  try {
    await body();
  } finally {
    await worker.stop(10_000);
    await pool.end();
  }
}

interface Row {
  status: string;
  outcome: string | null;
  attempts: number;
  last_error: string | null;
}

async function row(source: string, id: string): Promise<Row | undefined> {
  const { rows } = await t.pool.query<Row>(
    `select status, outcome, attempts, last_error from "${t.schema}".events where source = $1 and dedupe_key = $2`,
    [source, id],
  );
  return rows[0];
}

async function writes(id: string): Promise<{ attempt: number; note: string | null }[]> {
  const { rows } = await t.pool.query<{ attempt: number; note: string | null }>(
    `select attempt, note from ${applied} where event_id = $1 order by attempt`,
    [id],
  );
  return rows;
}

const write = (
  ctx: { tx: { query: Pool["query"] }; event: { id: string; attempt: number } },
  note?: string,
) =>
  ctx.tx.query(`insert into ${applied} (event_id, attempt, note) values ($1, $2, $3)`, [
    ctx.event.id,
    ctx.event.attempt,
    note ?? null,
  ]);

test("a handler that throws after its business write leaves no effect and the event retries, then goes dead after maxAttempts while other events keep settling", async () => {
  const source = "poison";
  await claimTestEvent(t.pool, t.ledger, { source, id: "p_poison" });
  for (let i = 0; i < 50; i++) await claimTestEvent(t.pool, t.ledger, { source, id: `p_good_${i}` });
  const seen: number[] = [];
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await write(ctx);
    if (ctx.event.id === "p_poison") {
      seen.push(ctx.event.attempt);
      throw new Error(`poisoned on attempt ${ctx.event.attempt}`);
    }
  });
  await withWorker(handlers, {}, () =>
    waitFor("the poisoned event dead and 50 settled", async () => {
      const { rows } = await t.pool.query<{ status: string; n: number }>(
        `select status, count(*)::int as n from "${t.schema}".events where source = $1 group by 1`,
        [source],
      );
      const n = (s: string) => rows.find((r) => r.status === s)?.n ?? 0;
      return n("dead") === 1 && n("settled") === 50;
    }),
  );

  const poison = await row(source, "p_poison");
  assert.deepEqual(
    { ...poison, last_error: poison?.last_error?.split("\n")[0] },
    {
      status: "dead",
      outcome: null,
      attempts: 3,
      last_error: "poisoned on attempt 3",
    },
  );
  assert.deepEqual(seen, [1, 2, 3]);
  assert.deepEqual(await writes("p_poison"), []);
  const good = await t.pool.query(
    `select status, outcome, attempts, count(*)::int as n from "${t.schema}".events
     where source = $1 and dedupe_key <> 'p_poison' group by 1, 2, 3`,
    [source],
  );
  assert.deepEqual(good.rows, [{ status: "settled", outcome: "applied", attempts: 1, n: 50 }]);
  const goodWrites = await t.pool.query(
    `select count(*)::int as n, count(distinct event_id)::int as d from ${applied} where event_id like 'p\\_good\\_%'`,
  );
  assert.deepEqual(goodWrites.rows, [{ n: 50, d: 50 }]);
});

test("a handler that fails twice then succeeds settles applied with attempts = 3", async () => {
  const source = "flaky";
  await claimTestEvent(t.pool, t.ledger, { source, id: "f_1" });
  const errors: (string | null)[] = [];
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    errors.push((await row(source, ctx.event.id))?.last_error?.split("\n")[0] ?? null);
    await write(ctx);
    if (ctx.event.attempt < 3) throw new Error(`flaky ${ctx.event.attempt}`);
  });
  await withWorker(handlers, {}, () =>
    waitFor("f_1 settled", async () => (await row(source, "f_1"))?.status === "settled"),
  );

  assert.deepEqual(await row(source, "f_1"), {
    status: "settled",
    outcome: "applied",
    attempts: 3,
    last_error: null,
  });
  // Each retry saw the previous failure recorded; only the successful attempt's write remains.
  assert.deepEqual(errors, [null, "flaky 1", "flaky 2"]);
  assert.deepEqual(await writes("f_1"), [{ attempt: 3, note: null }]);
});

test("a handler exceeding handlerTimeoutMs fails its attempt and is retried; its late query is refused", async () => {
  const source = "slow";
  await claimTestEvent(t.pool, t.ledger, { source, id: "s_1" });
  let late: unknown = "not run";
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await write(ctx, "before timeout");
    if (ctx.event.attempt === 1) {
      await sleep(1000);
      try {
        await write(ctx, "late");
        late = "ran";
      } catch (error) {
        late = error;
      }
    }
  });
  await withWorker(handlers, { handlerTimeoutMs: 200 }, async () => {
    await waitFor("s_1 settled", async () => (await row(source, "s_1"))?.status === "settled");
    await waitFor("the late query of attempt 1", async () => late !== "not run");
  });

  assert.deepEqual(await row(source, "s_1"), {
    status: "settled",
    outcome: "applied",
    attempts: 2,
    last_error: null,
  });
  assert.ok(late instanceof Error, `the late query was not refused: ${String(late)}`);
  assert.match(late.message, /attempt for slow\/s_1 is over/);
  assert.deepEqual(await writes("s_1"), [{ attempt: 2, note: "before timeout" }]);
});

test("a handler blocked in a database lock past handlerTimeoutMs does not hold its event", async () => {
  const source = "blocked";
  const blocker = `"${t.schema}".blocker`;
  await t.pool.query(`create table ${blocker} (id int primary key)`);
  await t.pool.query(`insert into ${blocker} values (1)`);
  await claimTestEvent(t.pool, t.ledger, { source, id: "b_1" });
  // Another transaction holds the row the handler wants, for longer than the test waits for the event.
  const holder = await t.pool.connect();
  await holder.query("begin");
  await holder.query(`select * from ${blocker} where id = 1 for update`);
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await write(ctx);
    if (ctx.event.attempt === 1) await ctx.tx.query(`update ${blocker} set id = 1 where id = 1`);
  });
  await withWorker(handlers, { handlerTimeoutMs: 300 }, async () => {
    try {
      await waitFor("b_1 settled", async () => (await row(source, "b_1"))?.status === "settled", 20_000);
    } finally {
      await holder.query("rollback");
      holder.release();
    }
  });
  assert.deepEqual(await row(source, "b_1"), {
    status: "settled",
    outcome: "applied",
    attempts: 2,
    last_error: null,
  });
  assert.deepEqual(await writes("b_1"), [{ attempt: 2, note: null }]);
});

test("a handler that swallows a failed query fails its attempt, retries and goes dead instead of looping", async () => {
  const source = "swallow";
  await claimTestEvent(t.pool, t.ledger, { source, id: "w_always" });
  await claimTestEvent(t.pool, t.ledger, { source, id: "w_once" });
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await write(ctx);
    if (ctx.event.id === "w_always" || ctx.event.attempt === 1) {
      // The error is caught, but it has aborted the transaction: the settle cannot commit these writes.
      await ctx.tx.query("select 1 / 0").catch(() => {});
    }
  });
  await withWorker(handlers, {}, () =>
    waitFor("w_always dead and w_once settled", async () => {
      const [always, once] = [await row(source, "w_always"), await row(source, "w_once")];
      return always?.status === "dead" && once?.status === "settled";
    }),
  );

  const always = await row(source, "w_always");
  assert.equal(always?.attempts, 3);
  assert.match(always?.last_error ?? "", /aborted/);
  assert.deepEqual(await writes("w_always"), []);
  assert.deepEqual(await row(source, "w_once"), {
    status: "settled",
    outcome: "applied",
    attempts: 2,
    last_error: null,
  });
  assert.deepEqual(await writes("w_once"), [{ attempt: 2, note: null }]);
});

test("a handler that tries to commit the event's transaction is refused and its writes roll back", async () => {
  const handlers = new Handlers().on("guard", "commit", async (ctx) => {
    await ctx.tx.query(`insert into ${applied} (event_id, attempt) values ($1, $2)`, [
      ctx.event.id,
      ctx.event.attempt,
    ]);
    await ctx.tx.query("commit");
  });
  await withWorker(handlers, { retry: { maxAttempts: 1, baseDelayMs: 20, maxDelayMs: 50 } }, async () => {
    await claimTestEvent(t.pool, t.ledger, { source: "guard", id: "evt_commit", type: "commit" });
    await waitFor("the event to go dead", async () => (await row("guard", "evt_commit"))?.status === "dead");
  });
  assert.match((await row("guard", "evt_commit"))?.last_error ?? "", /must not begin, commit or roll back/);
  const { rows } = await t.pool.query(`select 1 from ${applied} where event_id = 'evt_commit'`);
  assert.equal(rows.length, 0, "the write before the refused commit rolled back");
});
