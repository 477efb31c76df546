// `hookledger stats` from the events table: backlog and oldest pending age now, failed and dead events and p50/p99
// time to settle of the window's events, per source; the built binary prints them below the delivery counts.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { formatSeconds } from "../../src/stats/format.js";
import { readLedgerStats } from "../../src/stats/ledger.js";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { seedEvents } from "../helpers/ledger-rows.js";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
  await seedEvents(t.pool, t.ledger, [
    // Settle times 1..100 s: p50 = 50.5 s, p99 = 99.01 s (percentile_cont interpolates).
    ...Array.from({ length: 100 }, (_, i) => ({
      source: "stripe",
      id: `settled_${i}`,
      status: "settled" as const,
      receivedAgo: 600,
      settledAfter: i + 1,
    })),
    { source: "stripe", id: "pending_new", status: "pending", receivedAgo: 5 },
    { source: "stripe", id: "failed_1", status: "failed", attempts: 2, receivedAgo: 300 },
    { source: "stripe", id: "dead_1", status: "dead", attempts: 10, receivedAgo: 60 },
    // Old: outside a 24-hour window, but still the backlog's oldest event.
    { source: "github", id: "stuck", status: "pending", receivedAgo: 3 * 86_400 },
    { source: "github", id: "dead_old", status: "dead", receivedAgo: 3 * 86_400 },
  ]);
});
after(() => t?.drop());

const DAY_MS = 86_400_000;

test("readLedgerStats: backlog now, failed/dead/settle percentiles of the window, per source", async () => {
  const sources = await readLedgerStats(t.pool, t.ledger, { windowMs: DAY_MS });
  assert.deepEqual(
    sources.map((s) => [s.source, s.backlog, s.failed, s.dead]),
    [
      ["github", 1, 0, 0],
      ["stripe", 2, 1, 1],
    ],
  );
  const [github, stripe] = sources;
  assert.ok(github && stripe);
  assert.ok(
    Math.abs((github.oldestPendingSeconds ?? 0) - 3 * 86_400) < 60,
    String(github.oldestPendingSeconds),
  );
  assert.equal(github.settleP50Seconds, null);
  assert.ok(Math.abs((stripe.oldestPendingSeconds ?? 0) - 300) < 60, String(stripe.oldestPendingSeconds));
  assert.ok(Math.abs((stripe.settleP50Seconds ?? 0) - 50.5) < 0.01, String(stripe.settleP50Seconds));
  assert.ok(Math.abs((stripe.settleP99Seconds ?? 0) - 99.01) < 0.01, String(stripe.settleP99Seconds));

  const week = await readLedgerStats(t.pool, t.ledger, { windowMs: 7 * DAY_MS, source: "github" });
  assert.deepEqual(
    week.map((s) => [s.source, s.backlog, s.dead]),
    [["github", 1, 1]],
  );
  assert.deepEqual(await readLedgerStats(t.pool, t.ledger, { windowMs: DAY_MS, source: "nobody" }), []);
});

test("formatSeconds: ms, s, minutes, hours, days", () => {
  assert.deepEqual([0.25, 1.44, 42.4, 125, 7_503, 3 * 86_400 + 3600, null].map(formatSeconds), [
    "250 ms",
    "1.4 s",
    "42 s",
    "2m 05s",
    "2h 05m",
    "3d 01h",
    "-",
  ]);
});

test("hookledger stats (built binary) adds the ledger table and an events array to --json", async () => {
  const env = { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema };
  const table = await runCli(["stats", "--since", "24h"], { env });
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /^deliveries since .* \(last 24h\)$/m);
  assert.match(table.stdout, /no deliveries recorded in this window/);
  assert.match(table.stdout, /^ledger: backlog now; failed, dead and time to settle of the events received/m);
  assert.match(
    table.stdout,
    /^source\s+backlog\s+oldest pending\s+failed\s+dead\s+settle p50\s+settle p99$/m,
  );
  assert.match(table.stdout, /^github\s+1\s+3d 00h\s+0\s+0\s+-\s+-$/m);
  assert.match(table.stdout, /^stripe\s+2\s+5m 0\ds\s+1\s+1\s+5\d s\s+1m 39s$/m);

  const json = await runCli(["stats", "--source", "stripe", "--json"], { env });
  assert.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as { sources: unknown[]; events: Record<string, unknown>[] };
  assert.deepEqual(parsed.sources, []);
  const [stripe] = parsed.events;
  assert.deepEqual(
    stripe && [stripe.source, stripe.backlog, stripe.failed, stripe.dead, stripe.settleP50Seconds],
    ["stripe", 2, 1, 1, 50.5],
  );
  assert.equal(typeof stripe?.oldestPendingSeconds, "number");
  assert.equal(stripe?.settleP99Seconds, 99.01);

  const empty = await runCli(["stats", "--source", "nobody"], { env });
  assert.equal(empty.code, 0, empty.stderr);
  assert.match(empty.stdout, /no backlog and no events received in this window/);
});
