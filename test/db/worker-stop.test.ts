import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPool, type Pool } from "hookledger";
import { silentLogger } from "hookledger";
import { type Handler, Handlers } from "hookledger";
import { listenForClaims } from "../../src/worker/wake.js";
import { startWorker, type Worker, type WorkerOptions } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
let applied: string;

before(async () => {
  t = await freshLedger();
  applied = `"${t.schema}".applied`;
  await t.pool.query(`create table ${applied} (event_id text not null, note text not null)`);
});

after(() => t.drop());

type Extra = Partial<Omit<WorkerOptions, "pool" | "connectionString" | "ledger" | "handlers" | "log">>;

interface Running {
  readonly worker: Worker;
  readonly pool: Pool;
}

function start(handler: Handler, extra: Extra = {}): Running {
  const pool = createPool({ connectionString: t.url, role: "work", max: 3 });
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("stop", "*", handler),
    log: silentLogger(),
    concurrency: 2,
    pollIntervalMs: 100,
    ...extra,
  });
  return { worker, pool };
}

async function shutdown(running: Running): Promise<void> {
  await running.worker.stop(10_000);
  await running.pool.end();
}

async function row(
  id: string,
): Promise<{ status: string; outcome: string | null; attempts: number } | undefined> {
  const { rows } = await t.pool.query<{ status: string; outcome: string | null; attempts: number }>(
    `select status, outcome, attempts from "${t.schema}".events where source = 'stop' and dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

async function notes(id: string): Promise<string[]> {
  const { rows } = await t.pool.query<{ note: string }>(`select note from ${applied} where event_id = $1`, [
    id,
  ]);
  return rows.map((r) => r.note).sort();
}

async function write(ctx: Parameters<Handler>[0], note: string): Promise<void> {
  await ctx.tx.query(`insert into ${applied} (event_id, note) values ($1, $2)`, [ctx.event.id, note]);
}

/** Waits until the ledger's LISTEN connection is up, so a claim's NOTIFY can reach the worker. */
function listening(): Promise<void> {
  return waitFor("the LISTEN connection", async () => {
    const { rows } = await t.pool.query(
      `select 1 from pg_stat_activity where query = $1 and state = 'idle'`,
      [`listen "${t.ledger.channel}"`],
    );
    return rows.length > 0;
  });
}

test("a notification wakes an idle worker long before the poll interval", async () => {
  const running = start((ctx) => write(ctx, "woken"), { pollIntervalMs: 60_000 });
  try {
    await listening();
    await sleep(300); // every slot has looked once, found nothing and is asleep for a minute
    const claimed = Date.now();
    await claimTestEvent(t.pool, t.ledger, { source: "stop", id: "n_1" });
    await waitFor("n_1 settled", async () => (await row("n_1"))?.status === "settled", 5000);
    assert.ok(Date.now() - claimed < 5000);
  } finally {
    await shutdown(running);
  }
  assert.deepEqual(await notes("n_1"), ["woken"]);
});

test("waker.sleep(ms, mark) returns at once when a claim was notified after the mark", async () => {
  const waker = listenForClaims({ connectionString: t.url, channel: t.ledger.channel, log: silentLogger() });
  try {
    await listening();
    await sleep(100);
    const mark = waker.mark();
    // The slot is "busy" (not sleeping) when the notification arrives: it must not be lost.
    await claimTestEvent(t.pool, t.ledger, { source: "stop_elsewhere", id: "m_1" });
    await waitFor("the notification", async () => waker.mark() !== mark);
    const started = Date.now();
    await waker.sleep(60_000, mark);
    assert.ok(Date.now() - started < 1000);
    // Without a newer wake-up, the same call sleeps (here until wakeAll).
    const current = waker.mark();
    const slept = waker.sleep(60_000, current).then(() => "woken");
    assert.equal(await Promise.race([slept, sleep(200, "sleeping")]), "sleeping");
    waker.wakeAll();
    assert.equal(await slept, "woken");
  } finally {
    await waker.close();
  }
});

test("stop() waits for an in-flight event to finish", async () => {
  let entered = false;
  let finished = false;
  const running = start(async (ctx) => {
    entered = true;
    await sleep(500);
    await write(ctx, "finished");
    finished = true;
  });
  await claimTestEvent(t.pool, t.ledger, { source: "stop", id: "w_1" });
  try {
    await waitFor("the handler to start", async () => entered);
    await running.worker.stop(5000);
    assert.equal(finished, true);
    assert.deepEqual(await row("w_1"), { status: "settled", outcome: "applied", attempts: 1 });
  } finally {
    await shutdown(running);
  }
  assert.deepEqual(await notes("w_1"), ["finished"]);
});

test("stop(grace) abandons an event still running after the grace, which another worker then applies exactly once", async () => {
  let entered = false;
  let late: unknown = "not run";
  const first = start(async (ctx) => {
    await write(ctx, "first worker");
    entered = true;
    await sleep(3000);
    try {
      await write(ctx, "first worker, after the grace");
      late = "ran";
    } catch (error) {
      late = error;
    }
  });
  await claimTestEvent(t.pool, t.ledger, { source: "stop", id: "a_1" });
  try {
    await waitFor("the handler to start", async () => entered);
    const stopping = Date.now();
    await first.worker.stop(300);
    assert.ok(Date.now() - stopping < 2500, `stop(300) took ${Date.now() - stopping} ms`);
    // Rolled back, not failed: the event is simply due again.
    assert.deepEqual(await row("a_1"), { status: "pending", outcome: null, attempts: 0 });
  } finally {
    await shutdown(first);
  }

  const second = start((ctx) => write(ctx, "second worker"));
  try {
    await waitFor("a_1 settled", async () => (await row("a_1"))?.status === "settled");
    await waitFor("the first handler's late query", async () => late !== "not run");
  } finally {
    await shutdown(second);
  }
  assert.ok(late instanceof Error, `the late query was not refused: ${String(late)}`);
  assert.deepEqual(await row("a_1"), { status: "settled", outcome: "applied", attempts: 1 });
  assert.deepEqual(await notes("a_1"), ["second worker"]);
});
