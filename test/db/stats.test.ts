// Delivery statistics: the observer's per-minute counts reach delivery_stats in one upsert per flush, add up across
// flushes and processes, survive a failed write, and `hookledger stats` (the built binary) reads them back.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import type { Queryable } from "../../src/ledger/context.js";
import type { DeliveryReport } from "hookledger";
import { createInlineGuard } from "hookledger";
import { silentLogger } from "hookledger";
import { createStatsObserver, type StatsObserverOptions } from "hookledger";
import { readDeliveryStats } from "../../src/stats/query.js";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { NOW_S, STRIPE_SECRETS, send, stripeBody, stripeHeaders } from "../helpers/http.js";
import { inlineSources, serveInline } from "../helpers/inline.js";

let t: TestLedger;
const closers: (() => Promise<void>)[] = [];

before(async () => {
  t = await freshLedger();
});

after(async () => {
  for (const close of closers) await close();
  await t?.drop();
});

const DAY_MS = 86_400_000;

/** A stats observer on `schema` (default: this file's ledger) that flushes only when told to, unless `flushMs` is set. */
function observer({ schema, ...options }: Partial<StatsObserverOptions> & { schema?: TestLedger } = {}) {
  const on = schema ?? t;
  const stats = createStatsObserver({
    db: on.pool,
    ledger: on.ledger,
    log: silentLogger(),
    flushMs: 3_600_000,
    ...options,
  });
  closers.push(() => stats.close());
  return stats;
}

const report = (source: string, result: DeliveryReport["result"], extra: Partial<DeliveryReport> = {}) => ({
  source,
  result,
  ...extra,
});

test("createStatsObserver: reports → flush → readDeliveryStats per source, duplicate rate and all", async () => {
  const fresh = await freshLedger();
  closers.push(() => fresh.drop());
  let clock = Date.now() - 5 * 60_000;
  const stats = observer({ schema: fresh, now: () => clock });
  const feed = [
    report("stripe", "accepted"),
    report("stripe", "accepted"),
    report("stripe", "duplicate", { wouldSkip: true }),
    report("stripe", "unauthorized", { reason: "signature_mismatch" }),
    report("stripe", "handshake"),
    report("stripe", "unavailable"),
    report("nope", "unknown_source"),
    report("github", "accepted"),
    report("github", "duplicate", { shortCircuit: true }),
  ];
  for (const r of feed) stats.delivery(r);
  clock += 60_000;
  for (const r of [
    report("stripe", "accepted"),
    report("stripe", "duplicate", { bodyMismatch: true }),
    report("stripe", "accepted", { retry: true }),
    report("stripe", "payload_too_large"),
  ])
    stats.delivery(r);
  await stats.flush();

  const { rows } = await fresh.pool.query(
    `select source, count(*)::int as minutes from ${fresh.ledger.s}.delivery_stats group by source order by source`,
  );
  assert.deepEqual(rows, [
    { source: "github", minutes: 1 },
    { source: "stripe", minutes: 2 },
  ]);
  const read = await readDeliveryStats(fresh.pool, fresh.ledger, { windowMs: DAY_MS });
  assert.deepEqual(read.sources, [
    {
      source: "github",
      deliveries: 2,
      uniqueEvents: 1,
      duplicates: 1,
      duplicateRate: 50,
      wouldSkip: 0,
      retries: 0,
      bodyMismatches: 0,
      refused: 0,
      unavailable: 0,
    },
    {
      source: "stripe",
      deliveries: 6,
      uniqueEvents: 3,
      duplicates: 2,
      duplicateRate: 100 / 3,
      wouldSkip: 1,
      retries: 1,
      bodyMismatches: 1,
      refused: 2,
      // 503s are counted apart: the provider retries them, so they are not deliveries yet.
      unavailable: 1,
    },
  ]);

  // Another flush and another process add to the same minutes instead of replacing them.
  stats.delivery(report("github", "duplicate"));
  await stats.flush();
  const other = observer({ schema: fresh, now: () => clock });
  other.delivery(report("github", "duplicate"));
  await other.close();
  const github = await readDeliveryStats(fresh.pool, fresh.ledger, { windowMs: DAY_MS, source: "github" });
  assert.deepEqual(
    github.sources.map((s) => [s.source, s.deliveries, s.duplicates]),
    [["github", 4, 3]],
  );
  // Minutes before the window are left out.
  const recent = await readDeliveryStats(fresh.pool, fresh.ledger, { windowMs: 60_000 });
  assert.deepEqual(recent.sources, []);
});

test("createStatsObserver: a failed write keeps the counts, and the next flush writes them once", async () => {
  let failNext = true;
  const flaky: Queryable = {
    query: ((query: Parameters<Queryable["query"]>[0], values?: unknown[]) => {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error("connection terminated"));
      }
      return t.pool.query(query as never, values as never);
    }) as Queryable["query"],
  };
  const stats = observer({ db: flaky });
  stats.delivery(report("flaky", "accepted"));
  await assert.rejects(stats.flush(), /connection terminated/);
  stats.delivery(report("flaky", "accepted"));
  await stats.flush();
  await stats.flush();
  const read = await readDeliveryStats(t.pool, t.ledger, { windowMs: DAY_MS, source: "flaky" });
  assert.equal(read.sources[0]?.uniqueEvents, 2);
});

test("createStatsObserver writes every flushMs on its own, and close() writes the rest", async () => {
  const stats = observer({ flushMs: 50 });
  stats.delivery(report("timed", "accepted"));
  const uniqueEvents = async () =>
    (await readDeliveryStats(t.pool, t.ledger, { windowMs: DAY_MS, source: "timed" })).sources[0]
      ?.uniqueEvents;
  await waitFor("the timed flush", async () => (await uniqueEvents()) === 1, 5000);
  stats.delivery(report("timed", "accepted"));
  await stats.close();
  assert.equal(await uniqueEvents(), 2);
});

test("inline guard in shadow mode + stats observer → the duplicate shows as would-skip in the stats", async () => {
  const fresh = await freshLedger();
  closers.push(() => fresh.drop());
  const stats = observer({ schema: fresh });
  const guard = createInlineGuard({
    sources: inlineSources(),
    db: fresh.newPool("ingest"),
    ledger: fresh.ledger,
    log: silentLogger(),
    mode: "shadow",
    now: () => NOW_S * 1000,
    observer: stats,
  });
  const server = await serveInline(guard, (_req, res) => {
    res.end("ok");
  });
  closers.push(() => server.close());
  const payload = stripeBody("evt_stats");
  for (const [secret, age] of [
    [STRIPE_SECRETS[0], 0],
    [STRIPE_SECRETS[0], 30],
    ["whsec_wrong", 0],
  ] as const) {
    await send(`${server.url}/webhooks/stripe`, {
      headers: stripeHeaders(payload, secret, NOW_S - age),
      body: payload,
    });
  }
  await stats.flush();
  const [stripe] = (await readDeliveryStats(fresh.pool, fresh.ledger, { windowMs: DAY_MS })).sources;
  assert.deepEqual(
    stripe && [stripe.deliveries, stripe.uniqueEvents, stripe.duplicates, stripe.wouldSkip, stripe.refused],
    [2, 1, 1, 1, 1],
  );
});

test("hookledger stats (built binary) prints the table, --json and --source from the seeded schema", async () => {
  const fresh = await freshLedger();
  closers.push(() => fresh.drop());
  const stats = observer({ schema: fresh });
  for (let i = 0; i < 8; i++) stats.delivery(report("stripe", "accepted"));
  for (let i = 0; i < 2; i++) stats.delivery(report("stripe", "duplicate", { wouldSkip: true }));
  stats.delivery(report("stripe", "unauthorized"));
  for (let i = 0; i < 3; i++) stats.delivery(report("stripe", "unavailable"));
  stats.delivery(report("github", "accepted"));
  await stats.close();
  const env = { ...process.env, DATABASE_URL: fresh.url, HOOKLEDGER_SCHEMA: fresh.schema };

  const table = await runCli(["stats", "--since", "24h"], { env });
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.split("\n");
  assert.match(lines[0] ?? "", /^deliveries since \d{4}-\d\d-\d\d \d\d:\d\d UTC \(last 24h\)$/);
  assert.match(
    table.stdout,
    /^source\s+deliveries\s+unique events\s+duplicates\s+duplicate rate\s+would-skip\s+retries\s+body mismatches\s+refused\s+503s$/m,
  );
  assert.match(table.stdout, /^stripe\s+10\s+8\s+2\s+20\.0%\s+2\s+0\s+0\s+1\s+3$/m);
  assert.match(table.stdout, /^github\s+1\s+1\s+0\s+0\.0%\s+0\s+0\s+0\s+0\s+0$/m);

  const json = await runCli(["stats", "--since", "90m", "--source", "stripe", "--json"], { env });
  assert.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as { window: string; sources: Record<string, unknown>[] };
  assert.equal(parsed.window, "90m");
  assert.deepEqual(parsed.sources, [
    {
      source: "stripe",
      deliveries: 10,
      uniqueEvents: 8,
      duplicates: 2,
      duplicateRate: 20,
      wouldSkip: 2,
      retries: 0,
      bodyMismatches: 0,
      refused: 1,
      unavailable: 3,
    },
  ]);
});

test("hookledger stats with a bad --since exits 2 naming the value and the form; on an unmigrated schema it says to migrate", async () => {
  const env = { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema };
  const bad = await runCli(["stats", "--since", "24x"], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--since '24x' is not a duration; .* e\.g\. 90m, 24h or 7d/);
  assert.doesNotMatch(bad.stderr, /\n\s+at /);

  const missing = `s_${randomBytes(4).toString("hex")}`;
  const unmigrated = await runCli(["stats"], { env: { ...env, HOOKLEDGER_SCHEMA: missing } });
  assert.equal(unmigrated.code, 1);
  assert.match(
    unmigrated.stderr,
    new RegExp(`schema '${missing}' has no current ledger .*hookledger migrate`),
  );

  const empty = await runCli(["stats", "--since", "7d", "--source", "nobody"], { env });
  assert.equal(empty.code, 0, empty.stderr);
  assert.match(empty.stdout, /no deliveries recorded in this window/);
});
