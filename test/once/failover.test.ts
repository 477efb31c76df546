import assert from "node:assert/strict";
import { test } from "node:test";
import type { FailoverPlan } from "../../chaos/failover.js";
import { summary } from "../../chaos/oracle.js";
import { runChaos } from "../../chaos/run.js";

// The failover suite's short version (docs/chaos.md, "Failover"): a primary and a streaming standby from the
// PostgreSQL binaries, receivers and workers as processes on the URL a shape gives them, a signed load, the primary
// killed with kill -9 and the standby promoted; then the chaos oracle.
const run = (failover: FailoverPlan) =>
  runChaos({
    events: 1200,
    receivers: 2,
    workers: 2,
    concurrency: 6,
    settleDeadlineMs: 90_000,
    plant: "none",
    seed: 7,
    failover,
  });

for (const shape of ["host-list", "moving-endpoint"] as const) {
  test(`runChaos(failover ${shape}, synchronous standby) loses no acknowledged event and accepts again`, async (t) => {
    const result = await run({ shape, synchronous: true, afterMs: 2500 });
    for (const line of summary(result.verdict).split("\n")) t.diagnostic(line);
    t.diagnostic(`failover: ${JSON.stringify(result.failover)}`);
    const failover = result.failover;
    assert.ok(failover, "the primary was killed");
    assert.ok(failover.ackedBeforeKill > 0, "deliveries were acknowledged before the kill");
    assert.equal(failover.missing, 0);
    assert.ok(failover.firstAcceptAnsweredMs >= 0, "a delivery was accepted on the new primary");
    // While it lasted: 503, no answer (a receiver's connection cut) or a duplicate's 200 (its claim committed
    // before the kill), never a 4xx or a 500.
    for (const status of Object.keys(failover.statuses))
      assert.ok(["0", "200", "503"].includes(status), status);
    assert.equal(result.verdict.ok, true);
    assert.equal(result.undelivered, 0);
  });
}

test("runChaos(failover, a standby that stopped replicating) measures the acknowledged events it lacks", async (t) => {
  // Replication cut 1.5 s before the kill: whatever the primary acknowledged meanwhile is not on the standby, and
  // the oracle must say so.
  const result = await run({
    shape: "host-list",
    synchronous: false,
    afterMs: 1500,
    cutReplicationMs: 1500,
  });
  for (const line of summary(result.verdict).split("\n")) t.diagnostic(line);
  t.diagnostic(`failover: ${JSON.stringify(result.failover)}`);
  assert.ok(result.failover && result.failover.missing > 0, "the lagging standby lacked acknowledged events");
  assert.equal(result.verdict.ackedMissing.length, result.failover.missing);
  assert.equal(result.verdict.ok, false);
});
