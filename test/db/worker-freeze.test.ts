import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { createPool, Handlers, silentLogger, startWorker } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

// docs/architecture.md §6: a worker that freezes keeps its locks; other entities must keep settling, and its events
// are retaken within 60 s whatever the handler timeout, never applied twice.

const FIXTURE = fileURLToPath(new URL("../fixtures/worker-process.ts", import.meta.url));

let t: TestLedger;
let child: ChildProcessWithoutNullStreams | undefined;

before(async () => {
  t = await freshLedger();
  await t.pool.query(`create table "${t.schema}".applied (event_id text not null, worker text not null)`);
});

after(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
  await t.drop();
});

const unsettled = async (like: string) =>
  (
    await t.pool.query<{ n: number }>(
      `select count(*)::int as n from ${t.ledger.s}.events where dedupe_key like $1 and status <> 'settled'`,
      [like],
    )
  ).rows[0]?.n;

test("a worker frozen with SIGSTOP mid-handler: other entities keep settling, its event is retaken within 60 s, applied once", async () => {
  const sub = (id: string, version: number) => ({ type: "subscription", id, version });
  await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "frozen_1", entity: sub("sub_x", 100) });

  // The frozen worker's handler timeout is long: the retake must not wait for it.
  child = spawn(process.execPath, ["--import", "tsx", FIXTURE], {
    env: {
      ...process.env,
      HOOKLEDGER_TEST_DATABASE_URL: t.url,
      FIXTURE_SCHEMA: t.schema,
      FIXTURE_MODE: "sleep",
      FIXTURE_SLEEP_MS: "5000",
      FIXTURE_ADVANCE: "1",
      FIXTURE_HANDLER_TIMEOUT_MS: "120000",
    },
  });
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    out += d;
  });
  const proc = child;
  const exited = new Promise((resolve) => proc.on("exit", resolve));
  await waitFor(
    "the worker process in its handler",
    async () => out.includes("in-handler frozen_1\n"),
    60_000,
  );
  // Frozen after the guard and its write, before the settle: it holds the event's row and the entity's guard row.
  child.kill("SIGSTOP");
  const frozenAt = Date.now();

  // Newer events of the frozen entity come first in the backlog, as many as this worker has slots.
  await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "frozen_2", entity: sub("sub_x", 100) });
  await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "frozen_3", entity: sub("sub_x", 101) });
  for (let i = 0; i < 20; i++) {
    await claimTestEvent(t.pool, t.ledger, { source: "kill", id: `other_${i}`, entity: sub(`sub_${i}`, 1) });
  }

  const pool = createPool({ connectionString: t.url, role: "work", max: 3 });
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("kill", "*", async (ctx) => {
      if (!(await ctx.advance())) return;
      await ctx.tx.query(`insert into "${t.schema}".applied (event_id, worker) values ($1, 'parent')`, [
        ctx.event.id,
      ]);
    }),
    log: silentLogger(),
    concurrency: 2,
    pollIntervalMs: 100,
    handlerTimeoutMs: 120_000,
  });
  try {
    await waitFor(
      "the other entities' 20 events settled while a worker is frozen",
      async () => {
        return (await unsettled("other\\_%")) === 0;
      },
      15_000,
    );
    await waitFor(
      "the frozen worker's event retaken and settled",
      async () => (await unsettled("frozen\\_%")) === 0,
      Math.max(0, frozenAt + 60_000 - Date.now()),
    );
    // The frozen worker wakes up: its transaction is gone, so nothing it did counts.
    child.kill("SIGCONT");
    await new Promise((r) => setTimeout(r, 2000));
    child.kill("SIGTERM");
    await exited;
  } finally {
    await worker.stop(10_000);
    await pool.end();
  }

  const { rows } = await t.pool.query<{ event_id: string; worker: string }>(
    `select event_id, worker from "${t.schema}".applied order by event_id`,
  );
  const byEvent = new Map<string, string[]>();
  for (const r of rows) byEvent.set(r.event_id, [...(byEvent.get(r.event_id) ?? []), r.worker]);
  // Attempts are counted when they start (docs/architecture.md, "Attempts are counted when they start"): the
  // frozen attempt's back-off, and an attempt given back because its entity was busy, can put frozen_1 or frozen_2
  // after frozen_3 (version 101); they are then stale. Either way each settles once, and only the parent applies.
  const outcomes = await t.pool.query<{ dedupe_key: string; status: string; outcome: string }>(
    `select dedupe_key, status, outcome from ${t.ledger.s}.events where dedupe_key in ('frozen_1', 'frozen_2')`,
  );
  const seen = JSON.stringify({ events: outcomes.rows, applied: rows });
  assert.equal(outcomes.rows.length, 2, seen);
  for (const row of outcomes.rows) {
    assert.equal(row.status, "settled", seen);
    assert.deepEqual(byEvent.get(row.dedupe_key), row.outcome === "stale" ? undefined : ["parent"], seen);
  }
  assert.deepEqual(byEvent.get("frozen_3"), ["parent"]);
  for (let i = 0; i < 20; i++) assert.deepEqual(byEvent.get(`other_${i}`), ["parent"], `other_${i}`);
  // While other work was due, settling never paused for 10 s: from the freeze to the first of the other entities'
  // events, and between each of them and the next (before the fix: nothing settled for 19-52 s).
  const settledAt = await t.pool.query<{ at: number }>(
    `select extract(epoch from settled_at) * 1000 as at from ${t.ledger.s}.events
     where dedupe_key like 'other\\_%' order by settled_at`,
  );
  const times = [frozenAt, ...settledAt.rows.map((r) => Number(r.at))];
  const gaps = times.slice(1).map((at, i) => at - (times[i] as number));
  assert.ok(Math.max(...gaps) < 10_000, `settling paused for ${Math.round(Math.max(...gaps))} ms: ${gaps}`);
  const guard = await t.pool.query(
    `select version::int as version, dedupe_key from ${t.ledger.s}.entity_versions where entity_id = 'sub_x'`,
  );
  assert.deepEqual(guard.rows, [{ version: 101, dedupe_key: "frozen_3" }]);
});

test("a live handler that awaits something else for longer than a frozen worker's bound keeps its transaction", async () => {
  await claimTestEvent(t.pool, t.ledger, {
    source: "slow",
    id: "slow_1",
    entity: { type: "s", id: "s1", version: 1 },
  });
  const pool = createPool({ connectionString: t.url, role: "work", max: 2 });
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("slow", "*", async (ctx) => {
      if (!(await ctx.advance())) return;
      // Past FROZEN_AFTER_MS (30 s) without a query of its own, well within its handler timeout.
      await new Promise((r) => setTimeout(r, 35_000));
      await ctx.tx.query(`insert into "${t.schema}".applied (event_id, worker) values ($1, 'slow')`, [
        ctx.event.id,
      ]);
    }),
    log: silentLogger(),
    concurrency: 1,
    pollIntervalMs: 100,
    handlerTimeoutMs: 120_000,
  });
  try {
    await waitFor("the slow event settled", async () => (await unsettled("slow\\_%")) === 0, 90_000);
  } finally {
    await worker.stop(10_000);
    await pool.end();
  }
  const { rows } = await t.pool.query(
    `select status, outcome, attempts from ${t.ledger.s}.events where dedupe_key = 'slow_1'`,
  );
  assert.deepEqual(rows, [{ status: "settled", outcome: "applied", attempts: 1 }]);
});
