import assert from "node:assert/strict";
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { after, before, test } from "node:test";
import { Handlers, httpSender, listOutbox, Outbox } from "hookledger";
import { type Answer, type Received, startAlertReceiver } from "../helpers/alert-receiver.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { spawnWorkerFixture } from "../helpers/worker-fixture.js";
import { withTestWorker } from "../helpers/worker.js";

// docs/outbox.md, "How a message is sent": a sender killed or frozen mid-call leaves its message to be taken again
// once the lease (the call's timeout + 5 s) has run out, under the same idempotency key, and only the newest
// attempt records its end. The destination here applies each idempotency key once, as Stripe does.

let t: TestLedger;
const children: ChildProcessWithoutNullStreams[] = [];

before(async () => {
  t = await freshLedger();
  await t.pool.query(`create table "${t.schema}".applied (event_id text not null, worker text not null)`);
});
after(async () => {
  for (const child of children) {
    child.kill("SIGCONT");
    child.kill("SIGKILL");
  }
  await t.drop();
});

/** A destination that applies each idempotency key once; `first` says how to answer the first request. */
async function keyedDestination(first: Answer, later: () => Answer | Promise<Answer> = () => 200) {
  const applied = new Set<string>();
  const destination = await startAlertReceiver((n: number, request: Received) => {
    applied.add(String(request.headers["idempotency-key"]));
    return n === 0 ? first : later();
  }, "/apply");
  return { destination, applied };
}

const messages = () => listOutbox(t.pool, t.ledger, { source: "kill" }, 100);

/** A worker in this process with the same "remote" sender, for the message the killed one left. */
async function withSurvivor(url: string, until: () => Promise<void>, timeoutMs = 1000) {
  const outbox = new Outbox({ timeoutMs, pollIntervalMs: 100 }).on("remote", httpSender({ url, timeoutMs }));
  await withTestWorker(t, t.newPool("work", 3), new Handlers(), { outbox, pollIntervalMs: 100 }, until);
}

test("a sender killed with SIGKILL mid-call: its message is sent again under the same key after the lease, applied once", async () => {
  const { destination, applied } = await keyedDestination("hang");
  try {
    await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "ob_kill_1" });
    const child = spawnWorkerFixture(t, children, {
      FIXTURE_MODE: "sleep",
      FIXTURE_SLEEP_MS: "0",
      FIXTURE_OUTBOX_URL: destination.url,
    });
    await waitFor("the first call to arrive", async () => destination.received.length === 1, 60_000);
    child.child.kill("SIGKILL");
    await child.exited;
    await withSurvivor(destination.url, () =>
      waitFor("the message sent", async () => (await messages())[0]?.status === "sent", 30_000),
    );
    const [sent] = await messages();
    assert.equal(sent?.attempts, 2);
    assert.equal(destination.received.length, 2);
    assert.deepEqual([...applied], [sent?.idempotencyKey]);
  } finally {
    await destination.close();
  }
});

test("a sender frozen with SIGSTOP past its lease: another takes the message and sends it; the frozen one's end is fenced out", async () => {
  // The survivor's call is held open while the frozen sender thaws: the frozen one's timed-out attempt 1 (its last,
  // so it would record the message dead) lands while attempt 2 is in flight, and must change nothing.
  let release: (answer: Answer) => void = () => {};
  const held = new Promise<Answer>((resolve) => {
    release = resolve;
  });
  const { destination, applied } = await keyedDestination("hang", () => held);
  try {
    await claimTestEvent(t.pool, t.ledger, { source: "kill", id: "ob_freeze_1" });
    const child = spawnWorkerFixture(t, children, {
      FIXTURE_MODE: "sleep",
      FIXTURE_SLEEP_MS: "0",
      FIXTURE_OUTBOX_URL: destination.url,
      FIXTURE_OUTBOX_MAX_ATTEMPTS: "1",
    });
    await waitFor("the first call to arrive", async () => destination.received.length === 1, 60_000);
    child.child.kill("SIGSTOP");
    const frozen = async () => (await messages()).find((m) => m.eventId === "ob_freeze_1");
    await withSurvivor(
      destination.url,
      async () => {
        await waitFor("the survivor's call", async () => destination.received.length === 2, 30_000);
        // Thawed, the frozen sender's timer has long fired: it tries to record attempt 1 as its last, failed.
        child.child.kill("SIGCONT");
        await new Promise((resolve) => setTimeout(resolve, 1500));
        child.child.kill("SIGKILL");
        assert.equal((await frozen())?.status, "pending");
        release(200);
        await waitFor("the message sent by the survivor", async () => (await frozen())?.status === "sent");
      },
      10_000,
    );
    const sent = await frozen();
    assert.equal(sent?.status, "sent");
    assert.equal(sent?.attempts, 2);
    assert.equal(sent?.lastError, null);
    assert.equal(sent?.lastStatus, 200);
    assert.deepEqual([...applied], [sent?.idempotencyKey]);
  } finally {
    release(200);
    await destination.close();
  }
});
