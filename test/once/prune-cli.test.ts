import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
let cwd: string;
before(async () => {
  t = await freshLedger();
  // An empty directory: no hookledger.config.mjs, so the demo config (sources stripe and github) applies.
  cwd = await mkdtemp(join(tmpdir(), "hookledger-prune-"));
});
after(async () => {
  await t?.drop();
  await rm(cwd, { recursive: true, force: true });
});

const prune = (...args: string[]) =>
  runCli(["prune", ...args], {
    cwd,
    env: { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema },
  });

async function settled(source: string, ids: string[], ageDays: number): Promise<void> {
  for (const id of ids) await claimTestEvent(t.pool, t.ledger, { source, id });
  await t.pool.query(
    `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied',
       settled_at = now() - $3::int * interval '1 day', received_at = now() - $3::int * interval '1 day'
     where source = $1::text and dedupe_key = any($2::text[])`,
    [source, ids, ageDays],
  );
}

const count = async (source: string) =>
  (
    await t.pool.query<{ n: number }>(
      `select count(*)::int as n from ${t.ledger.s}.events where source = $1`,
      [source],
    )
  ).rows[0]?.n;

test("hookledger prune --help exits 0 with examples", async () => {
  const r = await prune("--help");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /--older-than/);
  assert.match(r.stdout, /Examples:/);
});

test("hookledger prune without --older-than, or with a bad duration, exits 2 naming the flag", async () => {
  const missing = await prune();
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--older-than/);
  const bad = await prune("--older-than", "ninety");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--older-than 'ninety' is not a duration/);
  const duty = await prune("--older-than", "90d", "--duty", "0");
  assert.equal(duty.code, 2);
  assert.match(duty.stderr, /--duty '0' is not a number above 0 and at most 1/);
});

test("hookledger prune --older-than 7d exits 2 naming stripe, its 30-day window and --force; nothing deleted", async () => {
  await settled("stripe", ["evt_refused"], 10);
  const r = await prune("--older-than", "7d", "--source", "stripe");
  assert.equal(r.code, 2, r.stdout);
  assert.match(r.stderr, /stripe \(stripe: replay window 30 days\)/);
  assert.match(r.stderr, /--force/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.equal(await count("stripe"), 1);
  const forced = await prune("--older-than", "7d", "--source", "stripe", "--force", "--json");
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(JSON.parse(forced.stdout).pruned, 1);
  assert.equal(await count("stripe"), 0);
});

test("hookledger prune --dry-run --json counts and deletes nothing; then a real run deletes and tombstones", async () => {
  await settled("github", ["g1", "g2", "g3"], 100);
  await settled("github", ["g_recent"], 1);
  const dry = await prune("--older-than", "90d", "--dry-run", "--json");
  assert.equal(dry.code, 0, dry.stderr);
  const report = JSON.parse(dry.stdout);
  assert.equal(report.dryRun, true);
  assert.deepEqual(
    report.sources.find((s: { source: string }) => s.source === "github"),
    { source: "github", pruned: 3 },
  );
  assert.equal(await count("github"), 4);
  const real = await prune("--older-than", "90d", "--batch-size", "2");
  assert.equal(real.code, 0, real.stderr);
  assert.match(real.stdout, /deleted 3 settled rows/);
  assert.match(real.stdout, /github: 3 settled rows/);
  assert.equal(await count("github"), 1);
  const tombstones = await t.pool.query(
    `select count(*)::int as n from ${t.ledger.s}.tombstones where source = 'github'`,
  );
  assert.equal(tombstones.rows[0]?.n, 3);
});
