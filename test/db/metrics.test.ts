// Prometheus metrics fed by the edge and the worker, the backlog gauges read on scrape, and what the logs carry
// (and never carry) along the way.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { register as globalRegistry, type Registry } from "prom-client";
import { memorySeenCache } from "hookledger";
import { createPool, type Pool } from "hookledger";
import { createReceiver, type ReceiverOptions } from "hookledger";
import { silentLogger } from "hookledger";
import { createMetrics, type Metrics } from "hookledger";
import { stripeProvider } from "hookledger";
import { Handlers } from "hookledger";
import { startWorker } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import {
  NOW_S,
  type Reply,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  serve,
  stripeBody,
  stripeHeaders,
  stripeSignature,
} from "../helpers/http.js";
import { freePort } from "../helpers/net.js";

const ledgers: TestLedger[] = [];
let t: TestLedger;
before(async () => {
  t = await freshLedger();
  ledgers.push(t);
});
after(() => Promise.all(ledgers.map((l) => l.drop())));

/** One sample of a metric, matched on every label given (and on the sample's own name, for histograms). */
async function sample(registry: Registry, name: string, labels: Record<string, string> = {}, suffix = "") {
  const metric = registry.getSingleMetric(name);
  assert.ok(metric, `${name} is registered`);
  const { values } = await metric.get();
  return values.find(
    (v) =>
      ((v as { metricName?: string }).metricName ?? name) === `${name}${suffix}` &&
      Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  )?.value;
}

/** Runs `deliver` against a node:http server around a receiver with the stripe source. */
async function withReceiver<T>(options: Partial<ReceiverOptions>, deliver: (url: string) => Promise<T>) {
  const server = await serve(
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      ],
      db: t.newPool("ingest"),
      ledger: t.ledger,
      log: silentLogger(),
      now: () => NOW_S * 1000,
      ...options,
    }),
  );
  try {
    return await deliver(`${server.url}/webhooks/stripe`);
  } finally {
    await server.close();
  }
}
const post = (url: string, payload: string, headers = stripeHeaders(payload)): Promise<Reply> =>
  send(url, { headers, body: payload });

test("createMetrics: each instance has its own registry, never prom-client's global one", async () => {
  const a = createMetrics({ processMetrics: false });
  const b = createMetrics();
  a.observer.delivery({ source: "stripe", result: "accepted" });
  assert.equal(await sample(a.registry, "hookledger_deliveries_total", { source: "stripe" }), 1);
  assert.equal(await sample(b.registry, "hookledger_deliveries_total", { source: "stripe" }), undefined);
  assert.match(await b.registry.metrics(), /^process_cpu_user_seconds_total/m);
  assert.doesNotMatch(await a.registry.metrics(), /process_cpu/);
  assert.equal(globalRegistry.getSingleMetric("hookledger_deliveries_total"), undefined);
});

test("observer: deliveries by source and result, 401s by reason, claim latency, mismatches, cache hits", async () => {
  const { registry, observer } = createMetrics({ processMetrics: false });
  await withReceiver({ observer, seen: memorySeenCache() }, async (url) => {
    const payload = stripeBody("evt_metrics");
    assert.equal((await post(url, payload)).status, 200); // accepted
    assert.equal((await post(url, payload)).status, 200); // duplicate, from the cache
    const other = stripeBody("evt_metrics", { livemode: true });
    const fresh = createMetrics({ processMetrics: false });
    await withReceiver({ observer: fresh.observer }, async (plain) => {
      assert.equal((await post(plain, other)).status, 200); // duplicate with another body, from Postgres
    });
    assert.equal(
      await sample(fresh.registry, "hookledger_duplicate_body_mismatches_total", { source: "stripe" }),
      1,
    );
    assert.equal(
      await sample(fresh.registry, "hookledger_claim_duration_seconds", { result: "duplicate" }, "_count"),
      1,
    );
    const forged = { ...stripeHeaders(payload), "stripe-signature": stripeSignature(payload, "whsec_wrong") };
    assert.equal((await post(url, payload, forged)).status, 401);
    const late = stripeHeaders(payload, STRIPE_SECRETS[0], NOW_S - 301);
    assert.equal((await post(url, payload, late)).status, 401);
    assert.equal((await send(url.replace(/stripe$/, "no-such-source"), { body: "{}" })).status, 404);
  });
  const deliveries = (labels: Record<string, string>) =>
    sample(registry, "hookledger_deliveries_total", labels);
  assert.equal(await deliveries({ source: "stripe", result: "accepted" }), 1);
  assert.equal(await deliveries({ source: "stripe", result: "duplicate" }), 1);
  assert.equal(await deliveries({ source: "stripe", result: "unauthorized" }), 2);
  // The name of an unknown source comes from the URL: not a label value, or anyone could add series at will.
  assert.equal(await deliveries({ source: "", result: "unknown_source" }), 1);
  assert.equal(await sample(registry, "hookledger_duplicate_cache_hits_total", { source: "stripe" }), 1);
  const failures = await registry.getSingleMetric("hookledger_verification_failures_total")?.get();
  assert.equal(failures?.values.length, 2, "one series per reason");
  assert.ok(failures?.values.every((v) => v.value === 1 && v.labels.source === "stripe"));
  const claims = (suffix: string) =>
    sample(registry, "hookledger_claim_duration_seconds", { source: "stripe", result: "accepted" }, suffix);
  assert.equal(await claims("_count"), 1);
  assert.ok(((await claims("_sum")) ?? 0) > 0);
});

test("observer: counts read between deliveries, by a scrape or by metric.get(), count each delivery once", async () => {
  const { registry, observer } = createMetrics({ processMetrics: false });
  const deliver = (n: number, result: "accepted" | "duplicate") => {
    for (let i = 0; i < n; i++)
      observer.delivery({ source: "stripe", result, shortCircuit: result === "duplicate" });
  };
  deliver(2, "accepted");
  deliver(3, "duplicate");
  assert.match(
    await registry.metrics(),
    /^hookledger_deliveries_total\{source="stripe",result="duplicate"\} 3$/m,
  );
  deliver(4, "duplicate");
  observer.delivery({ source: "stripe", result: "unauthorized", reason: "signature_mismatch" });
  const duplicates = () =>
    sample(registry, "hookledger_deliveries_total", { source: "stripe", result: "duplicate" });
  assert.equal(await duplicates(), 7);
  assert.equal(await duplicates(), 7, "a read hands the counts over once");
  assert.match(
    await registry.metrics(),
    /^hookledger_deliveries_total\{source="stripe",result="accepted"\} 2$/m,
  );
  assert.equal(await sample(registry, "hookledger_duplicate_cache_hits_total", { source: "stripe" }), 7);
  assert.equal(
    await sample(registry, "hookledger_verification_failures_total", { reason: "signature_mismatch" }),
    1,
  );
});

test("onAttempt: attempts by result and outcome, attempt durations, dead letters", async () => {
  const l = await freshLedger();
  ledgers.push(l);
  const metrics = createMetrics({ processMetrics: false });
  const handlers = new Handlers()
    .on("test", "ok", async () => {})
    .on("test", "boom", async () => {
      throw new Error("boom");
    });
  await claimTestEvent(l.pool, l.ledger, { id: "evt_ok", type: "ok" });
  await claimTestEvent(l.pool, l.ledger, { id: "evt_boom", type: "boom" });
  await claimTestEvent(l.pool, l.ledger, { id: "evt_nobody", type: "nobody.listens" });
  const worker = startWorker({
    pool: l.newPool("work"),
    connectionString: l.url,
    ledger: l.ledger,
    handlers,
    log: silentLogger(),
    pollIntervalMs: 20,
    retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 10 },
    onAttempt: metrics.onAttempt,
  });
  const { registry } = metrics;
  try {
    await waitFor(
      "the dead letter",
      async () => (await sample(registry, "hookledger_dead_letters_total", { type: "boom" })) === 1,
    );
  } finally {
    await worker.stop(5000);
  }
  const attempts = (labels: Record<string, string>) =>
    sample(registry, "hookledger_attempts_total", { source: "test", ...labels });
  assert.equal(await attempts({ type: "ok", result: "settled", outcome: "applied" }), 1);
  assert.equal(await attempts({ type: "nobody.listens", result: "settled", outcome: "unhandled" }), 1);
  assert.equal(await attempts({ type: "boom", result: "failed" }), 1);
  assert.equal(await attempts({ type: "boom", result: "dead" }), 1);
  assert.equal(
    await sample(registry, "hookledger_attempt_duration_seconds", { result: "settled" }, "_count"),
    2,
  );
});

async function backlogMetrics(db: Pool, ledger = t.ledger, timeoutMs?: number): Promise<Metrics> {
  const metrics = createMetrics({ processMetrics: false });
  metrics.trackBacklog({ db, ledger, ...(timeoutMs !== undefined && { timeoutMs }) });
  return metrics;
}

test("backlog gauges: due events and the oldest one's wait, read on each scrape", async () => {
  const l = await freshLedger();
  ledgers.push(l);
  const { registry } = await backlogMetrics(l.pool, l.ledger);
  assert.match(await registry.metrics(), /^hookledger_backlog_due_events 0$/m);
  for (const id of ["evt_a", "evt_b", "evt_later"]) await claimTestEvent(l.pool, l.ledger, { id });
  await l.pool.query(
    `update ${l.ledger.s}.events set next_attempt_at = now() - interval '90 seconds' where dedupe_key = 'evt_a'`,
  );
  await l.pool.query(
    `update ${l.ledger.s}.events set status = 'failed', next_attempt_at = now() + interval '1 hour'
     where dedupe_key = 'evt_later'`,
  );
  const text = await registry.metrics();
  assert.match(text, /^hookledger_backlog_due_events 2$/m);
  assert.match(text, /^hookledger_backlog_up 1$/m);
  const oldest = Number(/^hookledger_backlog_oldest_due_seconds (\S+)$/m.exec(text)?.[1]);
  assert.ok(oldest >= 90 && oldest < 120, `oldest ${oldest}`);
});

test("backlog gauges: a database that does not answer in time never holds the scrape (up 0, NaN)", async () => {
  const { registry } = await backlogMetrics(t.pool, t.ledger, 300);
  const blocker = await t.pool.connect();
  try {
    await blocker.query("begin");
    await blocker.query(`lock table ${t.ledger.s}.events in access exclusive mode`);
    const started = performance.now();
    const text = await registry.metrics();
    assert.ok(performance.now() - started < 1000, `scrape took ${performance.now() - started} ms`);
    assert.match(text, /^hookledger_backlog_up 0$/m);
    // prom-client writes NaN as "Nan", which Prometheus parses (case-insensitively) as NaN.
    assert.match(text, /^hookledger_backlog_due_events nan$/im);
  } finally {
    await blocker.query("rollback");
    blocker.release();
  }
  // The read cut off by the lock may still be finishing; a later scrape reads again.
  await waitFor(
    "the backlog to be read again",
    async () => /^hookledger_backlog_up 1$/m.test(await registry.metrics()),
    5000,
  );

  const down = createPool({
    connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
    role: "admin",
  });
  try {
    const started = performance.now();
    assert.match(
      await (await backlogMetrics(down, t.ledger, 300)).registry.metrics(),
      /^hookledger_backlog_up 0$/m,
    );
    assert.ok(performance.now() - started < 1000);
  } finally {
    await down.end();
  }
});
