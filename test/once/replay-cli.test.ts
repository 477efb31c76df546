import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { claimEvent } from "hookledger";
import { stripeEventFromJson } from "hookledger";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { type FakeEvent, type FakeStripe, fakeEvent, startFakeStripe } from "../helpers/fake-stripe.js";

let t: TestLedger;
let dir: string;
before(async () => {
  t = await freshLedger();
  dir = await mkdtemp(join(tmpdir(), "hookledger-replay-"));
});
after(async () => {
  await t.drop();
  await rm(dir, { recursive: true, force: true });
});

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");

/** The demo config (no config file in `dir`), the test's schema, and the fake as Stripe's API. */
function env(fake: FakeStripe | undefined, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: t.url,
    HOOKLEDGER_SCHEMA: t.schema,
    STRIPE_API_KEY: fake?.apiKey ?? "sk_test_fake",
    ...(fake && { HOOKLEDGER_STRIPE_API_BASE: fake.url }),
    ...extra,
  };
}
const cli = (args: string[], environment: NodeJS.ProcessEnv) => runCli(args, { env: environment, cwd: dir });

async function deliver(event: FakeEvent): Promise<void> {
  const parsed = stripeEventFromJson(event as unknown as Record<string, unknown>);
  if (!parsed.ok) throw new Error(parsed.detail);
  const body = Buffer.from(JSON.stringify(event));
  await claimEvent(t.pool, t.ledger, {
    source: "stripe",
    event: parsed.event,
    body,
    headers: {},
    secretIndex: 0,
    arrivedVia: "delivery",
  });
}

test("hookledger replay --help and reconcile stripe --help exit 0 with examples", async () => {
  for (const args of [
    ["replay", "--help"],
    ["replay", "stripe", "--help"],
    ["reconcile", "stripe", "--help"],
  ]) {
    const r = await cli(args, env(undefined));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Examples:/);
  }
});

test("hookledger replay stripe without STRIPE_API_KEY exits 2 naming the variable", async () => {
  const r = await cli(
    ["replay", "stripe", "--source", "stripe", "--since", "2h"],
    env(undefined, { STRIPE_API_KEY: "" }),
  );
  assert.equal(r.code, 2);
  assert.match(r.stderr, /set STRIPE_API_KEY to a Stripe secret key/);
});

test("hookledger replay stripe with a bad --since or an unknown source exits 2 naming it", async () => {
  const since = await cli(["replay", "stripe", "--source", "stripe", "--since", "yesterday"], env(undefined));
  assert.equal(since.code, 2);
  assert.match(since.stderr, /--since 'yesterday' is neither a duration/);
  const source = await cli(["replay", "stripe", "--source", "nope", "--since", "2h"], env(undefined));
  assert.equal(source.code, 2);
  assert.match(source.stderr, /no source 'nope'/);
  const github = await cli(["replay", "stripe", "--source", "github", "--since", "2h"], env(undefined));
  assert.match(github.stderr, /is a github source/);
});

test("hookledger replay stripe with a refused key exits 1 naming the variable and the fix, never the key", async () => {
  const fake = await startFakeStripe([fakeEvent("evt_cli_401", 60)], "sk_test_right");
  try {
    const r = await cli(
      ["replay", "stripe", "--source", "stripe", "--since", "2h", "--api-key-env", "MY_STRIPE_KEY"],
      env(fake, { MY_STRIPE_KEY: "sk_test_wrong_secret" }),
    );
    assert.equal(r.code, 1);
    assert.match(r.stderr, /refused the API key in MY_STRIPE_KEY \(401\); set MY_STRIPE_KEY to/);
    assert.doesNotMatch(r.stdout + r.stderr, /sk_test_wrong_secret/);
    noStack(r.stderr);
  } finally {
    await fake.close();
  }
});

test("hookledger replay stripe: dry run, then the replay (after a 429), then reconcile finds nothing", async () => {
  const events = [fakeEvent("evt_cli_1", 3000), fakeEvent("evt_cli_2", 2000), fakeEvent("evt_cli_3", 1000)];
  const fake = await startFakeStripe(events);
  try {
    await deliver(events[1] as FakeEvent);
    const args = ["replay", "stripe", "--source", "stripe", "--since", "2h"];
    const dry = await cli([...args, "--dry-run"], env(fake));
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /missing: evt_cli_1 evt_cli_3/);
    assert.match(
      dry.stdout,
      /3 fetched, 1 already in the ledger, 2 missing \(dry run: nothing written\), 0 failed/,
    );

    fake.failures.push({ status: 429 });
    const run = await cli([...args, "--json"], env(fake));
    assert.equal(run.code, 0, run.stderr);
    const report = JSON.parse(run.stdout) as {
      fetched: number;
      duplicate: number;
      new: number;
      newIds: string[];
    };
    assert.deepEqual([report.fetched, report.duplicate, report.new], [3, 1, 2]);
    assert.deepEqual(report.newIds, ["evt_cli_1", "evt_cli_3"]);
    const { rows } = await t.pool.query<{ dedupe_key: string; arrived_via: string }>(
      `select dedupe_key, arrived_via from ${t.ledger.s}.events where source = 'stripe' order by seq`,
    );
    assert.deepEqual(
      rows.map((r) => `${r.dedupe_key}:${r.arrived_via}`),
      ["evt_cli_2:delivery", "evt_cli_1:replay", "evt_cli_3:replay"],
    );

    const reconcile = await cli(["reconcile", "stripe", "--source", "stripe", "--since", "2h"], env(fake));
    assert.equal(reconcile.code, 0, reconcile.stderr);
    assert.match(reconcile.stdout, /3 fetched, 3 already in the ledger, 0 new, 0 failed/);
  } finally {
    await fake.close();
  }
});

test("hookledger replay github --help dispatches to the GitHub replay's help", async () => {
  const r = await cli(["replay", "github", "--help"], env(undefined));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^hookledger replay github: ask GitHub to redeliver/);
});
