// The log of duplicate deliveries: each at debug, one info line per source and window, while the metrics and the
// statistics still count every one (docs/architecture.md, "Duplicates are logged at debug, summed up at info").
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  createLogger,
  createMetrics,
  createReceiver,
  createStatsObserver,
  type DeliveryReport,
  memorySeenCache,
  type ReceiverOptions,
  stripeProvider,
} from "hookledger";
import { readDeliveryStats } from "../../src/stats/query.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import {
  NOW_S,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  serve,
  stripeBody,
  stripeHeaders,
} from "../helpers/http.js";

type Line = Record<string, unknown>;

let t: TestLedger;
const closers: (() => Promise<void>)[] = [];
before(async () => {
  t = await freshLedger();
});
after(async () => {
  for (const close of closers) await close();
  await t.drop();
});

/** A receiver on a node:http server whose log lines are kept, parsed, in `lines`. */
async function logged(level: string, options: Partial<ReceiverOptions> = {}) {
  const lines: Line[] = [];
  const log = createLogger({
    level,
    format: "json",
    destination: { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
  });
  const server = await serve(
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      ],
      db: t.newPool("ingest"),
      ledger: t.ledger,
      log,
      now: () => NOW_S * 1000,
      seen: memorySeenCache(),
      ...options,
    }),
  );
  closers.push(() => server.close());
  const post = async (id: string) => {
    const payload = stripeBody(id);
    const reply = await send(`${server.url}/webhooks/stripe`, {
      headers: stripeHeaders(payload),
      body: payload,
    });
    assert.equal(reply.status, 200);
    return (JSON.parse(reply.text) as { status: string }).status;
  };
  return { lines, post, log };
}

const received = (lines: readonly Line[], result: string) =>
  lines.filter((l) => l.msg === "delivery received" && l.result === result);
const summaries = (lines: readonly Line[]) => lines.filter((l) => l.msg === "duplicate deliveries answered");

test("duplicates at info: no line each, one summary per window with how many the cache answered; metrics and statistics count them all", async () => {
  const metrics = createMetrics({ processMetrics: false });
  const stats = createStatsObserver({ db: t.pool, ledger: t.ledger, log: createLogger({ level: "silent" }) });
  closers.push(() => stats.close());
  const observer = {
    delivery(report: DeliveryReport) {
      metrics.observer.delivery(report);
      stats.delivery(report);
    },
  };
  // The window holds the four deliveries below even on a loaded machine (300 ms split them once in CI).
  const { lines, post } = await logged("info", { observer, duplicateSummaryMs: 1500 });

  assert.equal(await post("evt_dlog_a"), "accepted");
  assert.equal(await post("evt_dlog_a"), "duplicate"); // from the cache
  assert.equal(await post("evt_dlog_a"), "duplicate"); // from the cache
  // Claimed without this receiver, so its cache does not know it: Postgres answers.
  await claimTestEvent(t.pool, t.ledger, {
    source: "stripe",
    id: "evt_dlog_b",
    body: stripeBody("evt_dlog_b"),
  });
  assert.equal(await post("evt_dlog_b"), "duplicate");

  const accepted = received(lines, "accepted");
  assert.equal(accepted.length, 1, "every accepted event keeps its own info line");
  assert.equal(accepted[0]?.eventId, "evt_dlog_a");
  assert.equal(accepted[0]?.level, 30);
  assert.deepEqual(received(lines, "duplicate"), [], "no line per duplicate at info");

  await waitFor("the window's summary", async () => summaries(lines).length === 1, 5000);
  const [summary] = summaries(lines);
  assert.equal(summary?.level, 30);
  assert.equal(summary?.source, "stripe");
  assert.equal(summary?.duplicates, 3);
  assert.equal(summary?.fromCache, 2);
  assert.equal(summary?.windowSeconds, 1.5);

  // A duplicate after the summary opens the next window.
  assert.equal(await post("evt_dlog_b"), "duplicate");
  await waitFor("the next window's summary", async () => summaries(lines).length === 2, 5000);
  assert.equal(summaries(lines)[1]?.duplicates, 1);
  assert.equal(summaries(lines)[1]?.fromCache, 1, "evt_dlog_b is in the cache since Postgres answered it");

  const duplicates = metrics.registry.getSingleMetric("hookledger_deliveries_total");
  const values = (await duplicates?.get())?.values ?? [];
  assert.equal(values.find((v) => v.labels.result === "duplicate")?.value, 4);
  assert.equal(values.find((v) => v.labels.result === "accepted")?.value, 1);
  await stats.flush();
  const read = await readDeliveryStats(t.pool, t.ledger, { windowMs: 3_600_000, source: "stripe" });
  assert.equal(read.sources[0]?.duplicates, 4);
  assert.equal(read.sources[0]?.uniqueEvents, 1);
});

test("duplicates at debug: one line each with source, event id, type and whether the cache answered", async () => {
  const { lines, post } = await logged("debug", { duplicateSummaryMs: 60_000 });
  assert.equal(await post("evt_dlog_debug"), "accepted");
  assert.equal(await post("evt_dlog_debug"), "duplicate");
  const [line] = received(lines, "duplicate");
  assert.equal(line?.level, 20);
  assert.equal(line?.source, "stripe");
  assert.equal(line?.eventId, "evt_dlog_debug");
  assert.equal(line?.type, "customer.subscription.updated");
  assert.equal(line?.shortCircuit, true);
  assert.equal(received(lines, "accepted")[0]?.level, 30);
});
