import assert from "node:assert/strict";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { after, before, test } from "node:test";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimNumbered, eventStates } from "../helpers/events.js";
import { spawnWorkerFixture, withSurvivor } from "../helpers/worker-fixture.js";

// docs/architecture.md §6: a worker killed mid-batch applies nothing twice and leaves nothing stuck; attempts are
// counted durably, so an event that kills its process in every batch goes dead and its neighbours still settle.

let t: TestLedger;
const children: ChildProcessWithoutNullStreams[] = [];

before(async () => {
  t = await freshLedger();
  // xid: the transaction that wrote the row, so the test can tell which events ran in one batch.
  await t.pool.query(`create table "${t.schema}".applied (event_id text not null, worker text not null,
    xid text not null default pg_current_xact_id()::text)`);
});

after(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await t.drop();
});

/** Spawns the worker fixture (one slot, batches of up to 50) whose handler hangs or exits on `only`. */
function spawnWorker(mode: "hang" | "exit" | "commit-exit", only: string, maxAttempts?: number) {
  return spawnWorkerFixture(t, children, {
    FIXTURE_MODE: mode,
    FIXTURE_ONLY: only,
    // The whole backlog in one batch, however slow the machine.
    FIXTURE_BATCH_BUDGET_MS: "60000",
    ...(maxAttempts !== undefined && { FIXTURE_MAX_ATTEMPTS: String(maxAttempts) }),
  });
}

const claim = (prefix: string, count: number) => claimNumbered(t.pool, t.ledger, "kill", prefix, count);
const rows = (prefix: string) => eventStates(t.pool, t.ledger, prefix);

async function writes(prefix: string): Promise<Map<string, string[]>> {
  const { rows } = await t.pool.query<{ event_id: string; worker: string }>(
    `select event_id, worker from "${t.schema}".applied where event_id like $1 order by 1, 2`,
    [`${prefix}\\_%`],
  );
  const byEvent = new Map<string, string[]>();
  for (const r of rows) byEvent.set(r.event_id, [...(byEvent.get(r.event_id) ?? []), r.worker]);
  return byEvent;
}

test("a worker process killed with SIGKILL mid-batch: the batch rolls back, every event settles within 60 s, each applied once", async () => {
  const ids = await claim("mid", 20);
  // The first nine events of the batch have run and written when the tenth hangs.
  const child = spawnWorker("hang", "mid_09");
  await child.inHandler("mid_09");
  for (const id of ids.slice(0, 9)) assert.ok(child.output().includes(`in-handler ${id}\n`), id);
  child.child.kill("SIGKILL");
  assert.deepEqual(await child.exited, { code: null, signal: "SIGKILL" });
  const killedAt = Date.now();
  // Every attempt of the batch was counted before its handlers ran; nothing of it was committed.
  for (const row of await rows("mid")) assert.deepEqual([row.status, row.attempts], ["pending", 1]);
  assert.deepEqual(await writes("mid"), new Map());

  await withSurvivor(t, async () => {
    await waitFor(
      "the killed batch's events settled",
      async () => (await rows("mid")).every((r) => r.status === "settled"),
      60_000,
    );
    assert.ok(Date.now() - killedAt < 60_000);
  });
  const settled = await rows("mid");
  for (const row of settled) assert.deepEqual([row.outcome, row.attempts], ["applied", 2], row.dedupe_key);
  // Their last attempt ended unrecorded, so each ran alone: twenty batches, twenty transactions.
  const { rows: xids } = await t.pool.query(
    `select count(distinct xid)::int as n from "${t.schema}".applied where event_id like 'mid\\_%'`,
  );
  assert.deepEqual(xids, [{ n: 20 }]);
  assert.deepEqual(await writes("mid"), new Map(ids.map((id) => [id, ["survivor"]])));
});

// docs/architecture.md "Batches": an event whose attempt ended unrecorded runs alone, so a poison event that ends its
// process spends its own attempts, not its neighbours'.
test("an event whose handler exits its process in a batch of 12: it goes dead after maxAttempts, the 11 others settle, each applied once", async () => {
  const ids = await claim("poison", 12);
  const poison = "poison_04";
  const maxAttempts = 3;
  let poisonRuns = 0;
  let spawned = 0;
  const done = async () => {
    const all = await rows("poison");
    return all.every((r) => (r.dedupe_key === poison ? r.status === "dead" : r.status === "settled"));
  };
  while (!(await done())) {
    assert.ok(
      spawned++ < 10,
      `still not done after ${spawned} worker processes: ${JSON.stringify(await rows("poison"))}`,
    );
    const child = spawnWorker("exit", poison, maxAttempts);
    const ended = await Promise.race([
      child.exited.then(() => "exited" as const),
      waitFor("the poison dead and the others settled", done, 60_000).then(() => "done" as const),
    ]);
    if (ended === "done") {
      child.child.kill("SIGTERM");
      await child.exited;
    } else assert.deepEqual(await child.exited, { code: 3, signal: null });
    poisonRuns += child
      .output()
      .split("\n")
      .filter((l) => l === `in-handler ${poison}`).length;
  }

  const all = await rows("poison");
  const dead = all.find((r) => r.dedupe_key === poison);
  assert.deepEqual([dead?.status, dead?.attempts], ["dead", maxAttempts]);
  assert.match(dead?.last_error ?? "", /attempt 3 ended without an outcome/);
  assert.equal(poisonRuns, maxAttempts, "the poison's handler ran once per attempt");
  const others = all.filter((r) => r.dedupe_key !== poison);
  for (const row of others) {
    assert.equal(row.outcome, "applied", row.dedupe_key);
    // Counted in the first batch, which the poison ended; then run alone, apart from the poison's later crashes.
    assert.equal(row.attempts, 2, row.dedupe_key);
  }
  const applied = await writes("poison");
  assert.deepEqual(
    [...applied.keys()],
    ids.filter((id) => id !== poison),
  );
  for (const [id, by] of applied) assert.deepEqual(by, ["child"], id);
});

// docs/architecture.md, "A handler that ends the transaction": the events whose writes a handler's own commit made
// durable stay dead even when the worker dies before it can record them (their arms were committed, arm.ts), and
// the events whose turn had not come run again.
test("a handler that commits its batch's transaction, then its process exits: the events it committed are dead, applied once; the rest settle", async () => {
  const ids = await claim("armed", 10);
  const culprit = "armed_04";
  const child = spawnWorker("commit-exit", culprit);
  assert.deepEqual(await child.exited, { code: 3, signal: null });
  const ran = ids.slice(0, 5);
  const notRun = ids.slice(5);
  // The culprit's commit made the five handlers' writes durable, and nothing recorded them yet.
  assert.deepEqual(await writes("armed"), new Map(ran.map((id) => [id, ["child"]])));
  for (const row of await rows("armed")) assert.deepEqual([row.status, row.attempts], ["pending", 1]);

  await withSurvivor(t, async () => {
    await waitFor(
      "every event ended",
      async () => (await rows("armed")).every((r) => ["settled", "dead"].includes(r.status)),
      60_000,
    );
  });
  const ledger = new Map((await rows("armed")).map((r) => [r.dedupe_key, r]));
  for (const id of ran) {
    const row = ledger.get(id);
    assert.deepEqual([row?.status, row?.attempts], ["dead", 1], id);
    assert.match(row?.last_error ?? "", /a handler of its batch ended the transaction/, id);
  }
  for (const id of notRun)
    assert.deepEqual([ledger.get(id)?.status, ledger.get(id)?.outcome], ["settled", "applied"]);
  assert.deepEqual(
    await writes("armed"),
    new Map<string, string[]>([
      ...ran.map((id): [string, string[]] => [id, ["child"]]),
      ...notRun.map((id): [string, string[]] => [id, ["survivor"]]),
    ]),
  );
  // Each death is in the attempt history, under the attempt the handler's commit ended (the events after it have
  // their own record: an attempt that ended unrecorded).
  const { rows: history } = await t.pool.query<{ dedupe_key: string; attempt: number }>(
    `select dedupe_key, attempt from ${t.ledger.s}.attempt_errors
     where dedupe_key like 'armed\\_%' and error like 'a handler of its batch ended%' order by 1`,
  );
  assert.deepEqual(
    history.map((h) => [h.dedupe_key, h.attempt]),
    ran.map((id) => [id, 1]),
  );
  // The batch's row of marks went with the last event it marked.
  const { rows: marks } = await t.pool.query(`select count(*)::int as n from "${t.schema}".batch_marks`);
  assert.deepEqual(marks, [{ n: 0 }]);
});
