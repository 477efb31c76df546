// `hookledger events list|show|retry|requeue` as users run them: the built binary against a seeded ledger.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { seedDead, seedEvents } from "../helpers/ledger-rows.js";

const DAY = 86_400;

let t: TestLedger;
let env: NodeJS.ProcessEnv;
before(async () => {
  t = await freshLedger();
  env = { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema };
  await seedEvents(t.pool, t.ledger, [
    {
      source: "stripe",
      id: "evt_paid",
      type: "invoice.paid",
      status: "settled",
      outcome: "applied",
      attempts: 1,
      receivedAgo: 120,
      payload: { id: "evt_paid", data: { object: { amount: 4200 } } },
      headers: { "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)" },
    },
    {
      source: "stripe",
      id: "evt_dead",
      type: "customer.updated",
      status: "dead",
      attempts: 10,
      lastError: "Error: upstream 503\n    at handler",
      receivedAgo: 60,
    },
    { source: "github", id: "gh_failed", type: "push", status: "failed", attempts: 2, receivedAgo: 30 },
  ]);
});
after(() => t?.drop());

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");
const status = async (source: string, key: string) =>
  (
    await t.pool.query<{ status: string }>(
      `select status from ${t.ledger.s}.events where source = $1 and dedupe_key = $2`,
      [source, key],
    )
  ).rows[0]?.status;

test("hookledger events list prints the table newest first; filters narrow; --json parses", async () => {
  const table = await runCli(["events", "list"], { env });
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trimEnd().split("\n");
  assert.match(
    lines[0] ?? "",
    /^id\s+type\s+status\s+attempts\s+received \(UTC\)\s+settled \(UTC\)\s+last error$/,
  );
  assert.deepEqual(
    lines.slice(1).map((l) => l.split(/\s+/)[0]),
    ["github/gh_failed", "stripe/evt_dead", "stripe/evt_paid"],
  );
  assert.match(
    table.stdout,
    /stripe\/evt_dead\s+customer\.updated\s+dead\s+10\s+.*Error: upstream 503 at handler$/m,
  );
  assert.match(table.stdout, /stripe\/evt_paid\s+invoice\.paid\s+settled\/applied\s+1\s/);

  const json = await runCli(["events", "list", "--source", "stripe", "--status", "dead", "--json"], { env });
  assert.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as { id: string; attempts: number; lastError: string }[];
  assert.deepEqual(
    parsed.map((e) => [e.id, e.attempts, e.lastError]),
    [["stripe/evt_dead", 10, "Error: upstream 503\n    at handler"]],
  );

  const none = await runCli(["events", "list", "--type", "nothing.like.this", "--since", "1h"], { env });
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout, "no events match\n");
});

test("hookledger events list with a bad value exits 2 naming the flag and the allowed values", async () => {
  for (const [args, message] of [
    [["--status", "deadd"], /--status 'deadd' is not one of pending, failed, settled, dead, inline/],
    [["--outcome", "ok"], /--outcome 'ok' is not one of applied, stale, unhandled, ignored/],
    [["--since", "yesterday"], /--since 'yesterday' is neither a duration .* nor a timestamp/],
    [["--limit", "0"], /--limit '0' is not a whole number from 1 to/],
    [
      ["--colour"],
      /^hookledger events list: unknown option '--colour'; events list takes --config, --help, --source, --type, --since, --until, --status, --outcome, --limit, --json \(see `hookledger events list --help`\)$/m,
    ],
    [["--limit"], /^hookledger events list: --limit needs a value; /m],
    [["extra"], /unexpected argument 'extra'; events list takes /],
  ] as const) {
    const r = await runCli(["events", "list", ...args], { env });
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message);
    noStack(r.stderr);
  }
});

test("hookledger events show prints payload, headers and attempts; an unknown id exits 1 with the fix", async () => {
  const r = await runCli(["events", "show", "stripe/evt_paid"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^stripe\/evt_paid$/m);
  assert.match(r.stdout, /^ {2}status\s+settled\/applied$/m);
  assert.match(r.stdout, /^ {2}attempts\s+1$/m);
  assert.match(r.stdout, /^ {2}arrived via\s+delivery$/m);
  assert.match(r.stdout, /^ {2}duplicates\s+0$/m);
  assert.match(r.stdout, /^ {2}user-agent: Stripe\/1\.0/m);
  assert.match(r.stdout, /^ {6}"amount": 4200$/m, "payload pretty-printed");

  const bySource = await runCli(["events", "show", "--source", "stripe", "evt_dead", "--json"], { env });
  assert.equal(bySource.code, 0, bySource.stderr);
  const event = JSON.parse(bySource.stdout) as { id: string; status: string; lastError: string };
  assert.deepEqual([event.id, event.status], ["stripe/evt_dead", "dead"]);

  const unknown = await runCli(["events", "show", "Stripe/evt_paid"], { env });
  assert.equal(unknown.code, 1);
  assert.match(
    unknown.stderr,
    /no event Stripe\/evt_paid .*check the source name.*hookledger events list --source Stripe/,
  );
  noStack(unknown.stderr);

  const bad = await runCli(["events", "show", "evt_paid"], { env });
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /'evt_paid' is not an event id; give source\/dedupe_key/);
});

test("hookledger events retry: dead → pending; settled refused without --force (exit 1), run with it", async () => {
  const r = await runCli(["events", "retry", "stripe/evt_dead", "stripe/evt_paid"], { env });
  assert.equal(r.code, 1, "one id was not retried");
  assert.match(r.stdout, /^stripe\/evt_dead: dead → pending, due now \(10 attempts so far\)$/m);
  assert.match(r.stdout, /^stripe\/evt_paid: not retried: settled \(applied\).*idempotent.*pass --force/m);
  assert.equal(await status("stripe", "evt_dead"), "pending");
  assert.equal(await status("stripe", "evt_paid"), "settled");

  const forced = await runCli(["events", "retry", "--force", "stripe/evt_paid"], { env });
  assert.equal(forced.code, 0, forced.stdout + forced.stderr);
  assert.equal(await status("stripe", "evt_paid"), "pending");
});

test("hookledger events requeue: refuses without --yes off a terminal (exit 2), requeues with it", async () => {
  await seedDead(t.pool, t.ledger, "bulk", 1200);
  const refused = await runCli(["events", "requeue", "--status", "dead", "--source", "bulk"], { env });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /would requeue 1200 dead events; .*pass --yes/);
  noStack(refused.stderr);
  assert.equal(await status("bulk", "evt_1"), "dead");

  const missing = await runCli(["events", "requeue", "--source", "bulk", "--yes"], { env });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /needs one of --status dead, --status failed or --outcome unhandled/);
  const settled = await runCli(["events", "requeue", "--status", "settled", "--yes"], { env });
  assert.equal(settled.code, 2);
  assert.match(settled.stderr, /--status 'settled' is not one of dead, failed/);

  const done = await runCli(["events", "requeue", "--status", "dead", "--source", "bulk", "--yes"], { env });
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, /^requeued 1200 of 1200 dead events in 2 batches$/m);
  const { rows } = await t.pool.query(
    `select status, count(*)::int as n from ${t.ledger.s}.events where source = 'bulk' group by status`,
  );
  assert.deepEqual(rows, [{ status: "pending", n: 1200 }]);

  const again = await runCli(["events", "requeue", "--status", "dead", "--source", "bulk"], { env });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /no dead events match; nothing to requeue/);
});

test("hookledger events --help and each subcommand's --help show examples", async () => {
  const all = await runCli(["events", "--help"], { env });
  assert.equal(all.code, 0);
  for (const sub of ["list", "show", "retry", "requeue"]) {
    assert.match(all.stdout, new RegExp(`hookledger events ${sub} `));
    const one = await runCli(["events", sub, "--help"], { env });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /Examples:\n\s+hookledger events /);
  }
  const unknown = await runCli(["events", "purge"], { env });
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown subcommand 'events purge'; use list, show, retry or requeue/);
});

test("hookledger events requeue --outcome unhandled requeues the matching unhandled events only", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "typo", id: "u1", type: "invoice.paid", status: "settled", outcome: "unhandled", attempts: 1 },
    { source: "typo", id: "u2", type: "invoice.paid", status: "settled", outcome: "unhandled", attempts: 1 },
    { source: "typo", id: "u3", type: "customer.updated", status: "settled", outcome: "unhandled" },
    { source: "typo", id: "a1", type: "invoice.paid", status: "settled", outcome: "applied" },
    { source: "other", id: "u4", type: "invoice.paid", status: "settled", outcome: "unhandled" },
  ]);
  const r = await runCli(
    ["events", "requeue", "--outcome", "unhandled", "--source", "typo", "--type", "invoice.paid", "--yes"],
    { env },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^requeued 2 of 2 unhandled events in 1 batch$/m);
  const { rows } = await t.pool.query(
    `select source, dedupe_key, status, outcome, settled_at is null as unsettled, attempts
     from ${t.ledger.s}.events where source in ('typo', 'other') order by source desc, dedupe_key`,
  );
  assert.deepEqual(
    rows.map((e) => [`${e.source}/${e.dedupe_key}`, e.status, e.outcome, e.unsettled, e.attempts]),
    [
      ["typo/a1", "settled", "applied", false, 0],
      ["typo/u1", "pending", null, true, 1],
      ["typo/u2", "pending", null, true, 1],
      ["typo/u3", "settled", "unhandled", false, 0],
      ["other/u4", "settled", "unhandled", false, 0],
    ],
  );

  for (const [args, message] of [
    [["--outcome", "applied"], /--outcome 'applied' is not one of unhandled/],
    [
      ["--outcome", "unhandled", "--status", "dead"],
      /needs one of --status dead, --status failed or --outcome/,
    ],
  ] as const) {
    const bad = await runCli(["events", "requeue", ...args, "--yes"], { env });
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, message);
  }
});

test("hookledger events show of a pruned key explains its tombstone instead of 'not found'", async () => {
  await seedEvents(t.pool, t.ledger, [
    { source: "old", id: "evt_old", status: "settled", receivedAgo: 200 * DAY },
  ]);
  const live = await runCli(["events", "show", "old/evt_old"], { env });
  assert.equal(live.code, 0, live.stderr);
  const prune = await runCli(["prune", "--older-than", "90d", "--source", "old"], { env });
  assert.equal(prune.code, 0, prune.stderr);

  const r = await runCli(["events", "show", "old/evt_old"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stdout,
    /^old\/evt_old: pruned on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; a tombstone keeps the key so a late delivery is answered as a duplicate$/m,
  );
  const json = await runCli(["events", "show", "old/evt_old", "--json"], { env });
  assert.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as {
    id: string;
    status: string;
    receivedAt: string;
    prunedAt: string;
  };
  assert.deepEqual([parsed.id, parsed.status], ["old/evt_old", "pruned"]);
  assert.ok(Date.parse(parsed.prunedAt) - Date.parse(parsed.receivedAt) > 199 * DAY * 1000);

  const never = await runCli(["events", "show", "old/evt_never"], { env });
  assert.equal(never.code, 1);
  assert.match(never.stderr, /no event old\/evt_never/);
});
