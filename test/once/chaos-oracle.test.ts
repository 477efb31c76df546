import assert from "node:assert/strict";
import { test } from "node:test";
import type { Plant } from "../../chaos/app-config.js";
import { summary } from "../../chaos/oracle.js";
import { runChaos } from "../../chaos/run.js";

// The chaos suite's oracle must fail when it must: each planted fault (docs/chaos.md) is a small run without
// injected faults whose verdict names exactly the broken rule, and a clean run of the same size passes.
const small = (plant: Plant) =>
  runChaos({
    events: 150,
    receivers: 1,
    workers: 1,
    settleDeadlineMs: 30_000,
    plant,
    seed: 7,
    concurrency: 8,
  });

test("a clean small run passes", async (t) => {
  const { verdict } = await small("none");
  for (const line of summary(verdict).split("\n")) t.diagnostic(line);
  assert.equal(verdict.ok, true);
  assert.equal(verdict.sent, 151);
  assert.ok(verdict.staleSkips > 0, "the run exercises the version guard");
  assert.ok(
    verdict.applied > 0 && verdict.outboxUnsent.length === 0,
    "every applied event's message was sent",
  );
  assert.ok(verdict.forwardedCount > 0, "events were forwarded");
  // The late event is older than everything its entity forwarded: it is recorded stale, never sent.
  assert.ok(verdict.forwardStale >= 1, "the run exercises the forwards' stale skip");
});

test("an event applied twice (outside ctx.tx, then failed) is reported duplicated", async (t) => {
  const { verdict } = await small("duplicate");
  for (const line of summary(verdict).split("\n")) t.diagnostic(line);
  assert.equal(verdict.ok, false);
  assert.deepEqual(verdict.duplicated, ["evt_0"]);
  assert.deepEqual([verdict.lost, verdict.outOfOrder, verdict.stuck], [[], [], []]);
});

test("an event the provider never delivers is reported lost", async (t) => {
  const { verdict } = await small("lose");
  for (const line of summary(verdict).split("\n")) t.diagnostic(line);
  assert.equal(verdict.ok, false);
  assert.deepEqual(verdict.lost, ["evt_0"]);
  assert.deepEqual([verdict.duplicated, verdict.outOfOrder, verdict.stuck], [[], [], []]);
});

test("a stale version applied over a newer one is reported out of order, with the wrong final state", async (t) => {
  const { verdict } = await small("reorder");
  for (const line of summary(verdict).split("\n")) t.diagnostic(line);
  assert.equal(verdict.ok, false);
  // The late event (older than everything sub_0 saw) is applied last whatever the processing order.
  assert.ok(
    verdict.outOfOrder.some((line) => line.startsWith("sub_0: evt_late after")),
    verdict.outOfOrder.join(),
  );
  assert.ok(verdict.wrongState.some((line) => line.startsWith("sub_0: evt_late instead of")));
  assert.deepEqual([verdict.lost, verdict.duplicated], [[], []]);
});

test("an outbox sender that ignores its idempotency key is reported applying side effects twice", async (t) => {
  const { verdict, destination } = await small("resend");
  for (const line of summary(verdict).split("\n")) t.diagnostic(line);
  t.diagnostic(`destination: ${destination.requests} requests ${JSON.stringify(destination.statuses)}`);
  assert.equal(verdict.ok, false);
  assert.ok(verdict.sentTwice.length > 0, "a lost answer's message applied again under a new key");
  assert.deepEqual(
    [verdict.lost, verdict.duplicated, verdict.neverSent, verdict.sentUncommitted],
    [[], [], [], []],
  );
});

test("a source forwarding without per-entity order is reported delivering an older version after a newer one", async (t) => {
  const { verdict } = await small("unordered");
  for (const line of summary(verdict).split("\n")) t.diagnostic(line);
  assert.equal(verdict.ok, false);
  // Unordered, the late event (older than everything sub_0 saw) is forwarded after the rest, not skipped.
  assert.ok(
    verdict.forwardOutOfOrder.some((line) => line.startsWith("sub_0: evt_late after")),
    verdict.forwardOutOfOrder.join(),
  );
  assert.ok(verdict.forwardBehind.some((line) => line.startsWith("sub_0: evt_late")));
  assert.deepEqual(
    [verdict.lost, verdict.duplicated, verdict.forwardTwice, verdict.forwardNever, verdict.forwardUnexpected],
    [[], [], [], [], []],
  );
});
