// `hookledger outbox list|show|retry` as users run them: the built binary against a ledger whose messages a real
// worker wrote with ctx.outbox.send and sent to a local destination (400 → dead at once, 200 → sent).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Handlers, httpSender, listOutbox, Outbox } from "hookledger";
import { type AlertReceiver, startAlertReceiver } from "../helpers/alert-receiver.js";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { withTestWorker } from "../helpers/worker.js";

type Ref = "ord_1" | "ord_2" | "inv_1" | "inv_2" | "inv_3";
// In the order they are written (so newest last): [source, event id, sender, refused by the destination].
const SEEDS: [string, Ref, "http" | "crm", boolean][] = [
  ["shop", "ord_1", "http", false],
  ["shop", "ord_2", "http", true],
  ["billing", "inv_1", "crm", true],
  ["billing", "inv_2", "crm", false],
  ["billing", "inv_3", "http", true],
];

let t: TestLedger;
let env: NodeJS.ProcessEnv;
let destination: AlertReceiver;
let fixed = false;
let outbox: Outbox;
let handlers: Handlers;
const keys = {} as Record<Ref, string>;

before(async () => {
  t = await freshLedger();
  env = { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema };
  destination = await startAlertReceiver((_n, request) => {
    const body = JSON.parse(request.body) as { ref: string; reject: boolean };
    return body.reject && !fixed ? { status: 400, body: `${body.ref} refused` } : 200;
  }, "/shop");
  const retry = { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 50 };
  outbox = new Outbox({ retry, pollIntervalMs: 100 }).on(
    "crm",
    httpSender({ url: new URL("/crm", destination.url).href }),
  );
  handlers = new Handlers();
  for (const source of ["shop", "billing"]) {
    handlers.on(source, "*", async (ctx) => {
      const { sender, body } = ctx.event.payload as { sender: string; body: { ref: Ref } };
      const payload = sender === "http" ? { url: destination.url, body } : body;
      keys[body.ref] = await ctx.outbox.send(sender, payload);
    });
  }
  await withTestWorker(
    t,
    t.newPool("work", 4),
    handlers,
    { concurrency: 1, pollIntervalMs: 100, outbox },
    async () => {
      for (const [source, ref, sender, reject] of SEEDS) {
        await claimTestEvent(t.pool, t.ledger, {
          source,
          id: ref,
          type: "order.placed",
          payload: { sender, body: { ref, reject } },
        });
        // One at a time, so each message is newer than the one before.
        await waitFor(`${source}/${ref}'s message settled`, async () => {
          const [m] = (await listOutbox(t.pool, t.ledger, { source }, 10)).filter((m) => m.eventId === ref);
          return m !== undefined && m.status !== "pending";
        });
      }
    },
  );
});
after(async () => {
  await destination?.close();
  await t?.drop();
});

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");
/** The columns of each line of `outbox list`: key, status, sender, event and message key, attempts, last error. */
const table = (stdout: string) =>
  stdout
    .trimEnd()
    .split("\n")
    .map((line) => line.split(/ {2,}/));
const keysOf = (stdout: string) => table(stdout).map(([key]) => key);
const state = async () =>
  (
    await t.pool.query<{ idempotency_key: string; status: string; attempts: number; next: Date }>(
      `select idempotency_key, status, attempts, next_attempt_at as next
       from ${t.ledger.s}.outbox order by idempotency_key`,
    )
  ).rows;
const row = async (ref: Ref) => (await state()).find((r) => r.idempotency_key === keys[ref]);

test("hookledger outbox list shows every message newest first: key, status, sender, event, attempts, last error", async () => {
  const r = await runCli(["outbox", "list"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "", "no '--limit N for more' hint under the limit");
  assert.deepEqual(table(r.stdout), [
    [keys.inv_3, "dead", "http", "billing/inv_3 #0", "attempts 1", "HTTP 400: inv_3 refused"],
    [keys.inv_2, "sent", "crm", "billing/inv_2 #0", "attempts 1"],
    [keys.inv_1, "dead", "crm", "billing/inv_1 #0", "attempts 1", "HTTP 400: inv_1 refused"],
    [keys.ord_2, "dead", "http", "shop/ord_2 #0", "attempts 1", "HTTP 400: ord_2 refused"],
    [keys.ord_1, "sent", "http", "shop/ord_1 #0", "attempts 1"],
  ]);
  for (const key of Object.values(keys)) assert.match(key, /^hl_[A-Za-z0-9_-]{32}$/);
});

test("hookledger outbox list --status dead lists only the dead messages, newest first; --source, --sender, --limit narrow", async () => {
  const dead = await runCli(["outbox", "list", "--status", "dead"], { env });
  assert.equal(dead.code, 0, dead.stderr);
  assert.deepEqual(keysOf(dead.stdout), [keys.inv_3, keys.inv_1, keys.ord_2]);

  const billingDead = await runCli(["outbox", "list", "--status", "dead", "--source", "billing"], { env });
  assert.deepEqual(keysOf(billingDead.stdout), [keys.inv_3, keys.inv_1]);
  const crm = await runCli(["outbox", "list", "--sender", "crm"], { env });
  assert.deepEqual(keysOf(crm.stdout), [keys.inv_2, keys.inv_1]);
  const shopSent = await runCli(["outbox", "list", "--source", "shop", "--status", "sent"], { env });
  assert.deepEqual(keysOf(shopSent.stdout), [keys.ord_1]);

  const two = await runCli(["outbox", "list", "--limit", "2"], { env });
  assert.equal(two.code, 0, two.stderr);
  assert.deepEqual(keysOf(two.stdout), [keys.inv_3, keys.inv_2]);
  assert.equal(two.stderr, "(the newest 2; --limit N for more, or narrow the filter)\n");

  const none = await runCli(["outbox", "list", "--source", "nowhere"], { env });
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout, "no outbox messages match\n");
});

test("hookledger outbox list --json prints parseable JSON with key, sender, status, attempts and dates", async () => {
  const r = await runCli(["outbox", "list", "--json", "--source", "shop"], { env });
  assert.equal(r.code, 0, r.stderr);
  const parsed = JSON.parse(r.stdout) as Record<string, unknown>[];
  assert.deepEqual(
    parsed.map((m) => [m.idempotencyKey, m.source, m.eventId, m.key, m.sender, m.status, m.attempts]),
    [
      [keys.ord_2, "shop", "ord_2", "#0", "http", "dead", 1],
      [keys.ord_1, "shop", "ord_1", "#0", "http", "sent", 1],
    ],
  );
  const [dead, sent] = parsed;
  assert.deepEqual([dead?.lastError, dead?.lastStatus, dead?.sentAt], ["HTTP 400: ord_2 refused", 400, null]);
  assert.deepEqual([sent?.lastError, sent?.lastStatus], [null, 200]);
  assert.ok(Date.parse(String(sent?.sentAt)) >= Date.parse(String(sent?.createdAt)), "ISO dates");
  assert.ok(Date.parse(String(dead?.createdAt)) > Date.parse(String(sent?.createdAt)), "newest first");
  assert.equal("payload" in (dead ?? {}), false, "the list leaves payloads to show");
});

test("hookledger outbox show KEY prints the message with its payload, last error and status; an unknown key exits 1", async () => {
  const r = await runCli(["outbox", "show", keys.ord_2], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^idempotency key: ${keys.ord_2}$`, "m"));
  assert.match(r.stdout, /^sender: {10}http$/m);
  assert.match(r.stdout, /^event: {11}shop\/ord_2 \(message #0\)$/m);
  assert.match(r.stdout, /^status: {10}dead$/m);
  assert.match(r.stdout, /^attempts: {8}1$/m);
  assert.match(r.stdout, /^next attempt: {4}never \(dead: retry it\)$/m);
  assert.match(r.stdout, /^last error: {6}HTTP 400: ord_2 refused$/m);
  assert.match(r.stdout, /^last status: {5}400$/m);
  assert.match(r.stdout, /^payload: {9}\{\n {2}"url": "http:\/\/127\.0\.0\.1:\d+\/shop",\n {2}"body": \{$/m);
  assert.match(r.stdout, /^ {4}"ref": "ord_2",\n {4}"reject": true$/m);

  const sent = await runCli(["outbox", "show", keys.inv_2, "--json"], { env });
  assert.equal(sent.code, 0, sent.stderr);
  const m = JSON.parse(sent.stdout) as Record<string, unknown>;
  assert.deepEqual(
    [m.idempotencyKey, m.sender, m.status, m.lastError, m.lastStatus, m.payload],
    [keys.inv_2, "crm", "sent", null, 200, { ref: "inv_2", reject: false }],
  );
  assert.ok(Number.isFinite(Date.parse(String(m.sentAt))));

  const unknown = await runCli(["outbox", "show", "hl_nosuchkey"], { env });
  assert.equal(unknown.code, 1);
  assert.equal(unknown.stdout, "");
  assert.equal(
    unknown.stderr,
    "hookledger: no outbox message hl_nosuchkey; find its key with `hookledger outbox list`\n",
  );
});

test("hookledger outbox with bad input exits 2 naming the problem and the fix, and changes nothing", async () => {
  const before = await state();
  for (const [args, message] of [
    [
      ["purge"],
      /unknown subcommand 'outbox purge'; use list, show or retry \(see `hookledger outbox --help`\)/,
    ],
    [["list", "--status", "bogus"], /--status 'bogus' is not one of pending, sent, dead/],
    [["list", "--limit", "0"], /--limit '0' is not a whole number from 1 to 100000/],
    [
      ["list", "--colour"],
      /unknown option '--colour'; outbox list takes .*--status.*hookledger outbox list --help/,
    ],
    [
      ["show"],
      /give one idempotency key: hookledger outbox show hl_… \(`hookledger outbox list` lists them\)/,
    ],
    [["show", keys.ord_2, keys.inv_1], /give one idempotency key/],
    [
      ["retry"],
      /give idempotency keys, or --dead \(with --source and --sender to narrow\): not both, not neither/,
    ],
    [["retry", "--dead", keys.ord_2], /not both, not neither/],
    [
      ["retry", keys.ord_2, "--sender", "http"],
      /--source and --sender narrow --dead; with keys, give only the keys/,
    ],
    [["retry", "--dead", "--status", "dead"], /unknown option '--status'; outbox retry takes /],
  ] as const) {
    const r = await runCli(["outbox", ...args], { env });
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(" "));
    assert.equal(r.stdout, "", args.join(" "));
    noStack(r.stderr);
  }
  assert.deepEqual(await state(), before, "no message changed");
  assert.equal(before.filter((m) => m.status === "dead").length, 3);
});

test("hookledger outbox --help exits 0 with the usage; each subcommand's --help prints its line; bare outbox exits 2", async () => {
  const r = await runCli(["outbox", "--help"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage: hookledger outbox <list\|show\|retry> \[options\]$/m);
  assert.match(r.stdout, /hookledger outbox list \[--status pending\|sent\|dead\] \[--source S\]/);
  assert.match(r.stdout, /hookledger outbox retry \(IDEMPOTENCY_KEY… \| --dead/);
  assert.match(r.stdout, /Examples:\n\s+hookledger outbox list --status dead/);
  for (const sub of ["list", "show", "retry"]) {
    const one = await runCli(["outbox", sub, "--help"], { env });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, new RegExp(`^Usage: hookledger outbox ${sub} `));
  }
  const bare = await runCli(["outbox"], { env });
  assert.equal(bare.code, 2);
  assert.equal(bare.stdout, r.stdout);
});

test("hookledger outbox retry KEY makes a dead message pending with attempts 0; a sent key is not retried (exit 1)", async () => {
  const r = await runCli(["outbox", "retry", keys.ord_2, keys.ord_1], { env });
  assert.equal(r.code, 1, "one key was not retried");
  assert.equal(
    r.stdout,
    `${keys.ord_2}: dead → pending, due now\n` +
      `${keys.ord_1}: not retried: not dead (pending, sent, or no such key; see \`hookledger outbox show\`)\n`,
  );
  const retried = await row("ord_2");
  assert.deepEqual([retried?.status, retried?.attempts], ["pending", 0]);
  assert.ok((retried?.next.getTime() ?? Infinity) <= Date.now() + 1000, "due now");
  assert.deepEqual([(await row("ord_1"))?.status, (await row("ord_1"))?.attempts], ["sent", 1]);
  assert.equal((await row("inv_1"))?.status, "dead", "other dead messages untouched");
});

test("hookledger outbox retry --dead --sender crm retries only that sender's dead messages and says how many", async () => {
  const r = await runCli(["outbox", "retry", "--dead", "--sender", "crm"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "retried 1 dead message: due now\n");
  assert.deepEqual([(await row("inv_1"))?.status, (await row("inv_1"))?.attempts], ["pending", 0]);
  assert.equal((await row("inv_3"))?.status, "dead", "an http message is not the crm sender's");

  const json = await runCli(["outbox", "retry", "--dead", "--source", "billing", "--json"], { env });
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), { retried: [keys.inv_3] });

  const none = await runCli(["outbox", "retry", "--dead"], { env });
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout, "no dead messages match; nothing to retry\n");
  const pending = await runCli(["outbox", "list", "--status", "pending"], { env });
  assert.deepEqual(keysOf(pending.stdout), [keys.inv_3, keys.inv_1, keys.ord_2]);
  assert.deepEqual(
    table(pending.stdout).map((cols) => cols[4]),
    ["attempts 0", "attempts 0", "attempts 0"],
  );
});

test("hookledger outbox retry, then a worker against a destination that now answers 200: each retried message ends sent", async () => {
  fixed = true;
  const before = destination.received.length;
  await withTestWorker(
    t,
    t.newPool("work", 4),
    handlers,
    { concurrency: 1, pollIntervalMs: 100, outbox },
    () => waitFor("every message sent", async () => (await state()).every((m) => m.status === "sent")),
  );
  const again = destination.received.slice(before).map((r) => r.headers["idempotency-key"]);
  assert.deepEqual(again.sort(), [keys.inv_3, keys.inv_1, keys.ord_2].sort(), "one call each, same keys");

  const r = await runCli(["outbox", "show", keys.ord_2, "--json"], { env });
  assert.equal(r.code, 0, r.stderr);
  const m = JSON.parse(r.stdout) as Record<string, unknown>;
  assert.deepEqual([m.status, m.attempts, m.lastError, m.lastStatus], ["sent", 1, null, 200]);
  const dead = await runCli(["outbox", "list", "--status", "dead"], { env });
  assert.equal(dead.stdout, "no outbox messages match\n");
});
