import assert from "node:assert/strict";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { after, before, test } from "node:test";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { spawnWorkerFixture, withSurvivor } from "../helpers/worker-fixture.js";

let t: TestLedger;
const children: ChildProcessWithoutNullStreams[] = [];

before(async () => {
  t = await freshLedger();
  await t.pool.query(`create table "${t.schema}".applied (event_id text not null, worker text not null)`);
});

after(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await t.drop();
});

/** Spawns the worker fixture in `mode`. */
function spawnWorker(mode: "hang" | "sleep" | "exit", maxAttempts?: number) {
  return spawnWorkerFixture(t, children, {
    FIXTURE_MODE: mode,
    ...(maxAttempts !== undefined && { FIXTURE_MAX_ATTEMPTS: String(maxAttempts) }),
  });
}

async function event(id: string) {
  const { rows } = await t.pool.query(
    `select status, outcome, attempts, last_error from "${t.schema}".events where source = 'kill' and dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

async function writes(id: string): Promise<string[]> {
  const { rows } = await t.pool.query<{ worker: string }>(
    `select worker from "${t.schema}".applied where event_id = $1`,
    [id],
  );
  return rows.map((r) => r.worker);
}

test("a worker process killed with SIGKILL mid-transaction → the event is applied exactly once within 60 s by another worker", async () => {
  await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "k_1" });
  const child = spawnWorker("hang");
  await child.inHandler("k_1");
  child.child.kill("SIGKILL");
  assert.deepEqual(await child.exited, { code: null, signal: "SIGKILL" });
  const killedAt = Date.now();

  await withSurvivor(
    t,
    async () => {
      await waitFor("k_1 settled", async () => (await event("k_1"))?.status === "settled", 60_000);
      assert.ok(Date.now() - killedAt < 60_000);
    },
    200,
  );
  // The killed transaction's insert was rolled back; its attempt was counted when it was picked.
  assert.deepEqual(await event("k_1"), {
    status: "settled",
    outcome: "applied",
    attempts: 2,
    last_error: null,
  });
  assert.deepEqual(await writes("k_1"), ["survivor"]);
});

test("a graceful SIGTERM lets the in-flight event finish and the process exits 0", async () => {
  await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "g_1" });
  const child = spawnWorker("sleep");
  await child.inHandler("g_1");
  child.child.kill("SIGTERM");
  assert.deepEqual(await child.exited, { code: 0, signal: null });
  assert.deepEqual(await event("g_1"), {
    status: "settled",
    outcome: "applied",
    attempts: 1,
    last_error: null,
  });
  assert.deepEqual(await writes("g_1"), ["child"]);
});

// docs/architecture.md §6: attempts are counted durably. Each worker process below picks the event and its handler
// ends the process (process.exit) before any outcome can be recorded; the next process must still see the count.
test("a handler that exits its process goes dead after maxAttempts, each attempt counted, nothing applied", async () => {
  await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "x_1" });
  const maxAttempts = 3;
  let runs = 0;
  // One process more than maxAttempts may run the handler: the last one finds the attempts spent.
  for (let i = 0; i < maxAttempts + 2 && (await event("x_1"))?.status !== "dead"; i++) {
    const child = spawnWorker("exit", maxAttempts);
    const outcome = await Promise.race([
      child.exited.then(() => "exited" as const),
      waitFor("x_1 dead", async () => (await event("x_1"))?.status === "dead", 60_000).then(
        () => "dead" as const,
      ),
    ]);
    if (outcome === "exited") {
      runs++;
      assert.deepEqual(await child.exited, { code: 3, signal: null });
    } else {
      child.child.kill("SIGKILL");
      await child.exited;
    }
  }
  const row = await event("x_1");
  assert.deepEqual(
    { ...row, last_error: undefined },
    { status: "dead", outcome: null, attempts: maxAttempts, last_error: undefined },
  );
  assert.match(row?.last_error ?? "", /attempt 3 ended without an outcome/);
  assert.equal(runs, maxAttempts, "the handler ran once per attempt, never past maxAttempts");
  assert.deepEqual(await writes("x_1"), []);
});
