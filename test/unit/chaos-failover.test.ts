import assert from "node:assert/strict";
import { test } from "node:test";
import { type Answer, failoverWindow } from "../../chaos/failover.js";
import { judge, type Observed } from "../../chaos/oracle.js";
import { repickWaits } from "../../chaos/repick.js";

// The chaos suite's failover figures and the oracle's failover rules (docs/chaos.md, "Failover"), on made-up
// observations: the run that feeds them real ones is test/once/chaos-oracle.test.ts.
const answer = (id: string, status: number, sentAt: number, answeredAt: number): Answer => ({
  id,
  status,
  accepted: status === 200,
  sentAt,
  answeredAt,
});

test("failoverWindow counts from the kill to the first POST sent after it and accepted", () => {
  const window = failoverWindow({ killedAt: 1000, promotedAt: 1300 }, [
    answer("evt_1", 200, 900, 950),
    // Sent before the kill, accepted after it: its claim had committed, so it does not end the window.
    answer("evt_2", 200, 990, 1400),
    answer("evt_3", 503, 1010, 1200),
    answer("evt_4", 0, 1020, 1250),
    // A duplicate answered from a receiver's cache while no server was writable: not an acceptance.
    { ...answer("evt_1", 200, 1030, 1260), accepted: false },
    answer("evt_3", 200, 1250, 1450),
    answer("evt_5", 503, 1100, 1500),
  ]);
  assert.deepEqual(window, {
    promotedMs: 300,
    firstAcceptSentMs: 250,
    firstAcceptAnsweredMs: 450,
    statuses: { 503: 1, 0: 1, 200: 1 },
    ackedBeforeKill: 1,
  });
});

test("failoverWindow reports no acceptance as NaN when nothing was accepted after the kill", () => {
  const window = failoverWindow({ killedAt: 1000, promotedAt: 1100 }, [answer("evt_1", 503, 1010, 1020)]);
  assert.ok(Number.isNaN(window.firstAcceptSentMs) && Number.isNaN(window.firstAcceptAnsweredMs));
  assert.deepEqual(window.statuses, { 503: 1 });
});

test("repickWaits measures each noted attempt from the last cutting fault before it, failovers included", () => {
  const waits = repickWaits(
    [
      { kind: "killWorker", at: 1000 },
      // A freeze's events come back through the idle bound: never the cause.
      { kind: "freezeWorker", at: 1500 },
      { kind: "failover", at: 3000 },
    ],
    [500, 1200, 1900, 3100, 3400],
  );
  assert.deepEqual(waits, { unrecorded: 5, p50Ms: 400, p95Ms: 900, maxMs: 900 });
});

const empty: Observed = {
  sent: [],
  ledger: [],
  applications: [],
  entities: [],
  outbox: [],
  destination: new Map(),
  forwards: [],
  forwarded: [],
  forwardKeys: new Map(),
};

test("judge fails a run whose promoted standby lacked an acknowledged event, even when a copy claimed it again", () => {
  const verdict = judge({ ...empty, ackedMissing: ["evt_7"] });
  assert.equal(verdict.ok, false);
  assert.deepEqual(verdict.ackedMissing, ["evt_7"]);
  assert.equal(judge(empty).ok, true);
});
