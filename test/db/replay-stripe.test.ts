import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { claimEvent } from "hookledger";
import { silentLogger } from "hookledger";
import { stripeEventFromJson } from "hookledger";
import { startReconciler } from "hookledger";
import type { ReplayReport } from "hookledger";
import { replayStripe, type StripeReplayOptions } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { type FakeEvent, fakeEvent, startFakeStripe } from "../helpers/fake-stripe.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const DAY = 86_400;
let sourceCount = 0;
/** A source name of its own per test, so tests share one schema without meeting. */
const newSource = () => `stripe_${++sourceCount}`;

async function deliver(source: string, event: FakeEvent): Promise<void> {
  const parsed = stripeEventFromJson(event as unknown as Record<string, unknown>);
  if (!parsed.ok) throw new Error(parsed.detail);
  await claimEvent(t.pool, t.ledger, {
    source,
    event: parsed.event,
    body: Buffer.from(JSON.stringify(event)),
    headers: {},
    secretIndex: 0,
    arrivedVia: "delivery",
  });
}

function options(url: string, source: string, extra: Partial<StripeReplayOptions> = {}): StripeReplayOptions {
  return {
    source,
    api: { apiKey: "sk_test_fake", apiBase: url, maxRetries: 1, rateLimitDelayMs: 10 },
    since: new Date(Date.now() - 3 * 3_600_000),
    ledger: { db: t.pool, ledger: t.ledger },
    ...extra,
  };
}

async function rows(source: string) {
  const { rows } = await t.pool.query<{
    dedupe_key: string;
    arrived_via: string;
    secret_index: number | null;
  }>(
    `select dedupe_key, arrived_via, secret_index from ${t.ledger.s}.events where source = $1 order by seq`,
    [source],
  );
  return rows;
}

test("replayStripe pages 250 events and claims only the 50 missing, oldest first, as replays", async () => {
  const source = newSource();
  // 250 events 10 s apart; the 200 newest were delivered, the 50 oldest were lost.
  const events = Array.from({ length: 250 }, (_, i) =>
    fakeEvent(`evt_${String(i).padStart(3, "0")}`, 3000 - i * 10),
  );
  const fake = await startFakeStripe(events);
  try {
    for (const event of events.slice(50)) await deliver(source, event);
    const report = await replayStripe(options(fake.url, source));
    assert.deepEqual(
      { fetched: report.fetched, duplicate: report.duplicate, new: report.new, failed: report.failed },
      { fetched: 250, duplicate: 200, new: 50, failed: 0 },
    );
    assert.equal(fake.requests.length, 3, "three pages of 100");
    assert.equal(fake.requests[1]?.get("starting_after"), "evt_150");
    const replayed = (await rows(source)).filter((r) => r.arrived_via === "replay");
    assert.deepEqual(
      replayed.map((r) => r.dedupe_key),
      events.slice(0, 50).map((e) => e.id),
      "claimed oldest first",
    );
    assert.ok(replayed.every((r) => r.secret_index === null));
    assert.deepEqual(
      report.newIds,
      events.slice(0, 50).map((e) => e.id),
    );
    const { rows: dup } = await t.pool.query(`select 1 from ${t.ledger.s}.duplicates where source = $1`, [
      source,
    ]);
    assert.equal(dup.length, 0, "events already in the ledger are not counted as duplicate deliveries");
    const { rows: body } = await t.pool.query<{ body: Buffer }>(
      `select body from ${t.ledger.s}.event_records where source = $1 and dedupe_key = 'evt_000'`,
      [source],
    );
    assert.deepEqual(JSON.parse(body[0]?.body.toString("utf8") ?? "{}"), events[0]);
  } finally {
    await fake.close();
  }
});

test("replayStripe clamps a --since older than 30 days to the edge and reports it", async () => {
  const source = newSource();
  const fake = await startFakeStripe([fakeEvent("evt_old", 31 * DAY), fakeEvent("evt_recent", 29 * DAY)]);
  try {
    const report = await replayStripe(
      options(fake.url, source, { since: new Date(Date.now() - 40 * DAY * 1000) }),
    );
    assert.equal(report.window?.clamped, true);
    assert.match(report.notes.join("\n"), /30 days: the window starts at the 30-day edge/);
    const gte = Number(fake.requests[0]?.get("created[gte]"));
    assert.ok(Math.abs(gte - (Date.now() / 1000 - 30 * DAY)) < 60, `created[gte]=${gte} is the 30-day edge`);
    assert.deepEqual(
      (await rows(source)).map((r) => r.dedupe_key),
      ["evt_recent"],
    );
  } finally {
    await fake.close();
  }
});

test("replayStripe --dry-run classifies and lists the missing ids but writes nothing", async () => {
  const source = newSource();
  const events = [fakeEvent("evt_a", 300), fakeEvent("evt_b", 200), fakeEvent("evt_c", 100)];
  const fake = await startFakeStripe(events);
  try {
    await deliver(source, events[1] as FakeEvent);
    const report = await replayStripe(options(fake.url, source, { dryRun: true }));
    assert.deepEqual([report.fetched, report.duplicate, report.new], [3, 1, 2]);
    assert.deepEqual(report.newIds, ["evt_a", "evt_c"]);
    assert.deepEqual(
      (await rows(source)).map((r) => r.dedupe_key),
      ["evt_b"],
    );
  } finally {
    await fake.close();
  }
});

test("replayStripe passes --type and --undelivered-only to the list", async () => {
  const source = newSource();
  const pending = { ...fakeEvent("evt_p", 100, "invoice.paid"), pending_webhooks: 1 };
  const fake = await startFakeStripe([
    pending,
    fakeEvent("evt_d", 90, "invoice.paid"),
    fakeEvent("evt_x", 80),
  ]);
  try {
    const report = await replayStripe(
      options(fake.url, source, { types: ["invoice.*"], undeliveredOnly: true }),
    );
    assert.equal(fake.requests[0]?.get("type"), "invoice.*");
    assert.equal(fake.requests[0]?.get("delivery_success"), "false");
    assert.deepEqual(report.newIds, ["evt_p"]);
  } finally {
    await fake.close();
  }
});

test("replayStripe with a refused key (401) throws naming the key variable, writing nothing", async () => {
  const source = newSource();
  const fake = await startFakeStripe([fakeEvent("evt_1", 60)], "sk_test_other");
  try {
    await assert.rejects(
      replayStripe(options(fake.url, source, { api: { apiKey: "sk_test_wrong", apiBase: fake.url } })),
      /refused the API key in STRIPE_API_KEY \(401\); set STRIPE_API_KEY to a secret key/,
    );
    assert.equal((await rows(source)).length, 0);
  } finally {
    await fake.close();
  }
});

test("replayStripe retries a 429 (with and without Stripe-Should-Retry) and then succeeds", async () => {
  const source = newSource();
  const fake = await startFakeStripe([fakeEvent("evt_1", 60)]);
  try {
    fake.failures.push({ status: 429 }, { status: 429, shouldRetry: true });
    const report = await replayStripe(
      options(fake.url, source, { api: { ...options("", "").api, apiBase: fake.url, maxRetries: 2 } }),
    );
    assert.equal(report.new, 1);
    assert.equal(fake.requests.length, 3);
  } finally {
    await fake.close();
  }
});

test("replayStripe reports 429s once the retries are exhausted", async () => {
  const source = newSource();
  const fake = await startFakeStripe([fakeEvent("evt_1", 60)]);
  try {
    fake.failures.push({ status: 429 }, { status: 429 }, { status: 429 });
    await assert.rejects(
      replayStripe(options(fake.url, source)),
      /rate-limiting the events list \(429\) after 1 retries/,
    );
  } finally {
    await fake.close();
  }
});

test("replayStripe retries a 5xx and then fails with a clear message, writing nothing", async () => {
  const source = newSource();
  const fake = await startFakeStripe([fakeEvent("evt_1", 60)]);
  try {
    fake.failures.push({ status: 500 }, { status: 503 });
    await assert.rejects(
      replayStripe(options(fake.url, source)),
      /Stripe answered 503 after 1 retries; nothing was written/,
    );
    assert.equal(fake.requests.length, 2, "retried once by the SDK");
    assert.equal((await rows(source)).length, 0);
  } finally {
    await fake.close();
  }
});

test("startReconciler adds the missing events on its interval and stops", async () => {
  const source = newSource();
  const events = [fakeEvent("evt_r1", 300), fakeEvent("evt_r2", 200), fakeEvent("evt_r3", 100)];
  const fake = await startFakeStripe(events);
  const reports: ReplayReport[] = [];
  await deliver(source, events[0] as FakeEvent);
  const reconciler = startReconciler({
    pool: t.pool,
    ledger: t.ledger,
    source,
    apiKey: fake.apiKey,
    apiBase: fake.url,
    intervalMs: 50,
    log: silentLogger(),
    onPass: (report) => reports.push(report),
  });
  try {
    await waitFor("two reconcile passes", async () => reports.length >= 2);
    await reconciler.stop();
    assert.deepEqual(reports[0]?.newIds, ["evt_r2", "evt_r3"]);
    assert.equal(reports[1]?.new, 0);
    assert.deepEqual(
      (await rows(source)).map((r) => `${r.dedupe_key}:${r.arrived_via}`),
      ["evt_r1:delivery", "evt_r2:replay", "evt_r3:replay"],
    );
    const passes = reports.length;
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(reports.length, passes, "no pass after stop");
  } finally {
    await reconciler.stop();
    await fake.close();
  }
});
