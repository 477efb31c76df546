// Each rule of startAlerts fires on its condition and not below its threshold. One evaluation measures every source,
// so once the source over the threshold has its message, the source below it was evaluated too and sent nothing.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type AlertRules, silentLogger, startAlerts } from "hookledger";
import { type AlertReceiver, startAlertReceiver, verifiedAlert } from "../helpers/alert-receiver.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { seedEvents } from "../helpers/ledger-rows.js";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
let t: TestLedger;
let hook: AlertReceiver;
before(async () => {
  t = await freshLedger();
  hook = await startAlertReceiver();
});
after(async () => {
  await hook.close();
  await t.drop();
});

// Runs one rule over `sources` until `fires` has a firing message; returns the sources that got one.
async function firingSources(rules: AlertRules, sources: string[], fires: string): Promise<string[]> {
  const alerts = startAlerts({
    pool: t.newPool("admin", 2),
    ledger: t.ledger,
    sources,
    rules,
    destinations: [{ kind: "webhook", name: "webhooks[0]", url: hook.url, secret: SECRET }],
    everyMs: 100,
    pollMs: 50,
    log: silentLogger(),
  });
  const mine = () =>
    hook.received.map((r) => verifiedAlert(SECRET, r)).filter((p) => sources.includes(p.data.source));
  try {
    await waitFor(`a firing message for ${fires}`, async () => mine().some((p) => p.data.source === fires));
  } finally {
    await alerts.stop();
  }
  for (const p of mine()) assert.equal(p.type, "alert.firing");
  return mine()
    .map((p) => p.data.source)
    .sort();
}

const stats = (source: string, refused: number, mismatches: number) =>
  t.pool.query(
    `insert into ${t.ledger.s}.delivery_stats (source, minute, refused, mismatches)
     values ($1::text, date_trunc('minute', now()), $2::int, $3::int)`,
    [source, refused, mismatches],
  );

test("startAlerts(deadLetters: atLeast 2) fires for a source with 2 dead events, not for one with 1", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "dl-low", id: "a", status: "dead" },
    { source: "dl-high", id: "a", status: "dead" },
    { source: "dl-high", id: "b", status: "dead" },
    { source: "dl-low", id: "b", status: "failed" },
  ]);
  assert.deepEqual(await firingSources({ deadLetters: { atLeast: 2 } }, ["dl-low", "dl-high"], "dl-high"), [
    "dl-high",
  ]);
  const [payload] = hook.received
    .map((r) => verifiedAlert(SECRET, r))
    .filter((p) => p.data.source === "dl-high");
  assert.equal(payload?.data.rule, "deadLetters");
  assert.equal(payload?.data.value, 2);
  assert.equal(payload?.data.threshold, 2);
  assert.equal(payload?.data.episode, 1);
});

test("startAlerts(backlogAge: over 60 s) fires for an event due 120 s ago, not for one due 30 s ago or not yet due", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "bl-low", id: "a", status: "pending", receivedAgo: 600, nextAttemptIn: -30 },
    { source: "bl-low", id: "b", status: "failed", receivedAgo: 600, nextAttemptIn: 300 },
    { source: "bl-high", id: "a", status: "failed", receivedAgo: 600, nextAttemptIn: -120 },
  ]);
  assert.deepEqual(
    await firingSources({ backlogAge: { overMs: 60_000 } }, ["bl-low", "bl-high"], "bl-high"),
    ["bl-high"],
  );
});

test("startAlerts(failureRate: over 0.5, minEvents 4) fires at 3 failing of 4, not at 1 of 4 nor at 2 of 2", async () => {
  const rows = (source: string, failed: number, settled: number) => [
    ...Array.from({ length: failed }, (_, i) => ({ source, id: `f${i}`, status: "failed" as const })),
    ...Array.from({ length: settled }, (_, i) => ({ source, id: `s${i}`, status: "settled" as const })),
  ];
  await seedEvents(t.pool, t.ledger, [
    ...rows("fr-low", 1, 3),
    ...rows("fr-few", 2, 0),
    ...rows("fr-high", 3, 1),
    // Settled outside the window: does not dilute fr-high's rate.
    { source: "fr-high", id: "old", status: "settled", receivedAgo: 7200, settledAfter: 1 },
  ]);
  const rules = { failureRate: { over: 0.5, windowMs: 15 * 60_000, minEvents: 4 } };
  assert.deepEqual(await firingSources(rules, ["fr-low", "fr-few", "fr-high"], "fr-high"), ["fr-high"]);
});

test("startAlerts(signatureFailures: 2 per minute over 5 min) fires at 20 refused deliveries, not at 5", async () => {
  await stats("sf-low", 5, 0);
  await stats("sf-high", 20, 0);
  const rules = { signatureFailures: { perMinute: 2, windowMs: 5 * 60_000 } };
  assert.deepEqual(await firingSources(rules, ["sf-low", "sf-high"], "sf-high"), ["sf-high"]);
});

test("startAlerts(bodyMismatches: atLeast 2) fires at 2 mismatches in the window, not at 1", async () => {
  await stats("bm-low", 0, 1);
  await stats("bm-high", 0, 2);
  const rules = { bodyMismatches: { atLeast: 2, windowMs: 3_600_000 } };
  assert.deepEqual(await firingSources(rules, ["bm-low", "bm-high"], "bm-high"), ["bm-high"]);
});

test("startAlerts(unhandled) fires for an event settled unhandled in the window, not for one settled before it", async () => {
  await seedEvents(t.pool, t.ledger, [
    {
      source: "un-low",
      id: "old",
      status: "settled",
      outcome: "unhandled",
      receivedAgo: 7200,
      settledAfter: 1,
    },
    { source: "un-low", id: "new", status: "settled", outcome: "applied" },
    { source: "un-high", id: "new", status: "settled", outcome: "unhandled" },
  ]);
  const rules = { unhandled: { atLeast: 1, windowMs: 3_600_000 } };
  assert.deepEqual(await firingSources(rules, ["un-low", "un-high"], "un-high"), ["un-high"]);
});
