import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";

let t: TestLedger;
let cwd: string;
let subs: string;
const updatedAt = new Date("2024-01-01T00:00:10.600Z");

before(async () => {
  t = await freshLedger();
  // An empty directory: no hookledger.config.mjs, so the demo config (sources stripe and github) applies.
  cwd = await mkdtemp(join(tmpdir(), "hookledger-backfill-"));
  subs = `"${t.schema}".subscriptions`;
  await t.pool.query(`create table ${subs} (stripe_id text primary key, updated_at timestamptz)`);
  await t.pool.query(`insert into ${subs} values ('sub_1', $1), ('sub_2', $1)`, [updatedAt]);
});
after(async () => {
  await t?.drop();
  await rm(cwd, { recursive: true, force: true });
});

const backfill = (...args: string[]) =>
  runCli(["backfill-versions", ...args], {
    cwd,
    env: { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema },
  });

const versions = async () =>
  (
    await t.pool.query<{ entity_id: string; version: string; source: string }>(
      `select entity_id, version::text as version, source from ${t.ledger.s}.entity_versions order by entity_id`,
    )
  ).rows;

test("hookledger backfill-versions --help exits 0 with Stripe's example", async () => {
  const r = await backfill("--help");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /floor\(extract\(epoch from updated_at\)\)/);
  assert.match(r.stdout, /Examples:/);
});

test("hookledger backfill-versions rejects an unknown option, a missing --sql and an unknown --source with exit 2", async () => {
  const unknown = await backfill("--entity", "subscription");
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /--entity.*backfill-versions --help/);
  const noSql = await backfill("--entity-type", "subscription");
  assert.equal(noSql.code, 2);
  assert.match(noSql.stderr, /needs --sql/);
  const source = await backfill("--source", "nope", "--sql", `select stripe_id, updated_at from ${subs}`);
  assert.equal(source.code, 2);
  assert.match(source.stderr, /--source 'nope' is not a configured source \(configured: stripe, github\)/);
  assert.doesNotMatch(source.stderr, /\n\s+at /);
});

test("hookledger backfill-versions answers the wrong columns, bad SQL and dates without a unit with the fix", async () => {
  const one = await backfill("--entity-type", "subscription", "--sql", `select stripe_id from ${subs}`);
  assert.equal(one.code, 2);
  assert.match(one.stderr, /returns 1 column \(stripe_id\): return two, \(id, version\), or three/);
  const bad = await backfill("--entity-type", "subscription", "--sql", "select id, v from no_such_table");
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /the query failed: relation "no_such_table" does not exist/);
  const noType = await backfill("--sql", `select stripe_id, 1 from ${subs}`);
  assert.match(noType.stderr, /pass --entity-type TYPE/);
  const dates = await backfill(
    "--entity-type",
    "subscription",
    "--sql",
    `select stripe_id, updated_at from ${subs}`,
  );
  assert.equal(dates.code, 2);
  assert.match(dates.stderr, /pass --source NAME .* or --unit s\|ms/);
  assert.deepEqual(await versions(), []);
});

test("hookledger backfill-versions --dry-run counts and writes nothing; the run seeds Stripe seconds from timestamptz", async () => {
  const args = [
    "--entity-type",
    "subscription",
    "--source",
    "stripe",
    "--sql",
    `select stripe_id, updated_at from ${subs};`,
  ];
  const dry = await backfill(...args, "--dry-run");
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /dry run: would seed the version guard from 2 rows: 2 new, 0 raised, 0 kept/);
  assert.deepEqual(await versions(), []);

  const run = await backfill(...args, "--json", "--batch", "1", "--app-database-url", t.url);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), {
    ok: true,
    dryRun: false,
    read: 2,
    inserted: 2,
    raised: 0,
    kept: 0,
    skipped: 0,
  });
  const seconds = String(Math.floor(updatedAt.getTime() / 1000));
  assert.deepEqual(await versions(), [
    { entity_id: "sub_1", version: seconds, source: "stripe" },
    { entity_id: "sub_2", version: seconds, source: "stripe" },
  ]);

  const lower = await backfill("--entity-type", "subscription", "--sql", `select stripe_id, 1 from ${subs}`);
  assert.equal(lower.code, 0, lower.stderr);
  assert.match(lower.stdout, /0 new, 0 raised, 2 kept/);
  assert.equal((await versions())[0]?.version, seconds);
});
