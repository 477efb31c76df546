// `hookledger forward list|show|enable` as users run them: the built binary against a ledger whose `stripe` source
// forwarded through a real worker to a local destination that dropped the first call, answered the second 503 and
// the third 410 (disabled), with a second event waiting; and a `shop` destination the breaker paused, set up in SQL.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createHookledger, listForwardDestinations, listOutbox, silentLogger } from "hookledger";
import { startAlertReceiver } from "../helpers/alert-receiver.js";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { serve, stripeBody, stripeHeaders } from "../helpers/http.js";

// Past the 512 bytes a destination's answer is cut at, and over several lines.
const UNAVAILABLE = `Service Unavailable\n\n  the upstream is down for maintenance;\n${"retry later. ".repeat(60)}`;

let t: TestLedger;
let empty: TestLedger;
let env: NodeJS.ProcessEnv;

before(async () => {
  [t, empty] = await Promise.all([freshLedger(), freshLedger()]);
  env = { ...process.env, DATABASE_URL: t.url, HOOKLEDGER_SCHEMA: t.schema };
  const answers = [
    "drop",
    { status: 503, body: UNAVAILABLE },
    { status: 410, body: "gone for good" },
  ] as const;
  const destination = await startAlertReceiver((n) => answers[Math.min(n, 2)] ?? 410, "/hooks");
  const hl = createHookledger({
    connectionString: t.url,
    schema: t.schema,
    sources: [
      {
        name: "stripe",
        provider: "stripe",
        secrets: ["whsec_test_a"],
        forward: {
          url: destination.url,
          secret: `whsec_${Buffer.alloc(32, 7).toString("base64")}`,
          retry: { maxAttempts: 20, baseDelayMs: 20, maxDelayMs: 60 },
        },
      },
    ],
    worker: { pollIntervalMs: 50 },
    log: silentLogger(),
  });
  hl.startWorker();
  const server = await serve(hl);
  const post = async (id: string) => {
    const body = stripeBody(id);
    const response = await fetch(`${server.url}/webhooks/stripe`, {
      method: "POST",
      headers: stripeHeaders(body),
      body,
    });
    assert.equal(response.status, 200);
  };
  try {
    await post("evt_1");
    await waitFor("stripe's destination disabled", async () => {
      const [d] = await listForwardDestinations(t.pool, t.ledger, ["stripe"]);
      return d?.disabledAt !== null && d?.disabledAt !== undefined;
    });
    await post("evt_2");
    await waitFor(
      "evt_2's forward written",
      async () => (await listOutbox(t.pool, t.ledger, { sender: "forward" }, 10)).length === 2,
    );
  } finally {
    await hl.close();
    await server.close();
    await destination.close();
  }
  await t.pool.query(
    `insert into ${t.ledger.s}.forward_destinations (source, failures, paused_until)
     values ('shop', 12, now() + interval '1 hour')`,
  );
  await t.pool.query(
    `insert into ${t.ledger.s}.outbox (source, dedupe_key, message_key, sender, idempotency_key, payload, status)
     values ('shop', 'ord_1', '#forward', 'forward', 'hl_shop_ord_1', '{}'::jsonb, 'dead')`,
  );
});
after(async () => {
  await t?.drop();
  await empty?.drop();
});

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");
/** A line of `forward show`: the name, padded, and the value. */
const field = (name: string, value: string) =>
  new RegExp(`^${name}: +${value.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`, "m");
/** The columns of each line of `forward list`: source, state, pending, dead, sent. */
const table = (stdout: string) =>
  stdout
    .trimEnd()
    .split("\n")
    .map((line) => line.split(/ {2,}/));
const destinationRow = async (source: string) =>
  (
    await t.pool.query<{
      disabled_at: Date | null;
      disabled_reason: string | null;
      paused_until: Date | null;
    }>(
      `select disabled_at, disabled_reason, paused_until from ${t.ledger.s}.forward_destinations where source = $1`,
      [source],
    )
  ).rows[0];

test("hookledger forward list shows a destination a 410 disabled with its reason, a paused one with its failures, and their counts", async () => {
  const stripe = await destinationRow("stripe");
  const shop = await destinationRow("shop");
  const r = await runCli(["forward", "list"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(table(r.stdout), [
    [
      "shop",
      `paused until ${shop?.paused_until?.toISOString()} after 12 failures`,
      "pending 0",
      "dead 1",
      "sent 0",
    ],
    [
      "stripe",
      `disabled since ${stripe?.disabled_at?.toISOString()} (HTTP 410 Gone)`,
      "pending 2",
      "dead 0",
      "sent 0",
    ],
  ]);
});

test("hookledger forward list --json prints parseable destinations; --source narrows; a source that never forwarded says so", async () => {
  const r = await runCli(["forward", "list", "--json", "--source", "stripe"], { env });
  assert.equal(r.code, 0, r.stderr);
  const [stripe, ...rest] = JSON.parse(r.stdout) as Record<string, unknown>[];
  assert.equal(rest.length, 0);
  assert.deepEqual(
    [
      stripe?.source,
      stripe?.disabledReason,
      stripe?.pausedUntil,
      stripe?.pending,
      stripe?.dead,
      stripe?.sent,
    ],
    ["stripe", "HTTP 410 Gone", null, 2, 0, 0],
  );
  assert.equal(stripe?.disabledAt, (await destinationRow("stripe"))?.disabled_at?.toISOString());

  const none = await runCli(["forward", "list", "--source", "strpie"], { env });
  assert.equal(none.code, 0, none.stderr);
  assert.equal(none.stdout, "strpie has not forwarded yet\n");
  const noJson = await runCli(["forward", "list", "--source", "strpie", "--json"], { env });
  assert.deepEqual(JSON.parse(noJson.stdout), []);
});

test("hookledger forward list on a ledger without forwards says no source has forwarded yet", async () => {
  const r = await runCli(["forward", "list"], {
    env: { ...process.env, DATABASE_URL: empty.url, HOOKLEDGER_SCHEMA: empty.schema },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "no source has forwarded yet\n");
});

test("hookledger forward show stripe evt_1 prints the forward's status and each attempt: HTTP status or no answer, ms, error, the answer on one line", async () => {
  const r = await runCli(["forward", "show", "stripe", "evt_1"], { env });
  assert.equal(r.code, 0, r.stderr);
  const [key] = (await listOutbox(t.pool, t.ledger, { source: "stripe", sender: "forward" }, 10))
    .filter((m) => m.eventId === "evt_1")
    .map((m) => m.idempotencyKey);
  assert.match(r.stdout, field("event", "stripe/evt_1"));
  assert.match(r.stdout, field("webhook id", String(key)));
  assert.match(r.stdout, field("status", "pending"));
  assert.match(r.stdout, field("attempts spent", "2"), "the 410's attempt is given back");
  assert.match(r.stdout, field("last error", "HTTP 410 Gone"));
  assert.match(r.stdout, field("last status", "410"));
  const attempts = r.stdout
    .split("attempts recorded:\n")[1]
    ?.trimEnd()
    .split("\n")
    .map((line) => line.trim().split(/ {2,}/));
  assert.equal(attempts?.length, 3, r.stdout);
  const [dropped, unavailable, gone] = attempts ?? [];
  assert.deepEqual(dropped?.slice(0, 1), ["#1"]);
  assert.equal(dropped?.[2], "no answer");
  assert.match(dropped?.[3] ?? "", /^\d+ ms$/);
  assert.ok((dropped?.[4] ?? "").length > 0, "the network error is named");

  assert.deepEqual([unavailable?.[0], unavailable?.[2], unavailable?.[4]], ["#2", "HTTP 503", "HTTP 503"]);
  assert.ok(Number.isFinite(Date.parse(unavailable?.[1] ?? "")), "an ISO time");
  const answer = unavailable?.[5] ?? "";
  assert.match(
    answer,
    /^answer: Service Unavailable the upstream is down for maintenance; retry later\. retry/,
  );
  assert.equal(answer.length, "answer: ".length + 120, "cut at 120 characters");
  assert.ok(answer.endsWith("…"));

  assert.deepEqual(
    [gone?.[0], gone?.[2], gone?.[4], gone?.[5]],
    ["#3", "HTTP 410", "HTTP 410 Gone", "answer: gone for good"],
  );
});

test("hookledger forward show --json prints the message and its attempts as parseable JSON, snippets whole", async () => {
  const r = await runCli(["forward", "show", "stripe", "evt_1", "--json"], { env });
  assert.equal(r.code, 0, r.stderr);
  const m = JSON.parse(r.stdout) as {
    source: string;
    eventId: string;
    sender: string;
    status: string;
    attempts: { attempt: number; at: string; status: number | null; snippet: string | null }[];
  };
  assert.deepEqual([m.source, m.eventId, m.sender, m.status], ["stripe", "evt_1", "forward", "pending"]);
  assert.deepEqual(
    m.attempts.map((a) => [a.attempt, a.status]),
    [
      [1, null],
      [2, 503],
      [3, 410],
    ],
  );
  assert.equal(m.attempts[1]?.snippet, UNAVAILABLE.slice(0, 512));
  assert.ok(m.attempts.every((a) => Number.isFinite(Date.parse(a.at))));

  const waiting = await runCli(["forward", "show", "stripe", "evt_2"], { env });
  assert.equal(waiting.code, 0, waiting.stderr);
  assert.match(waiting.stdout, field("status", "pending"));
  assert.match(waiting.stdout, /^no attempt recorded yet$/m);
});

test("hookledger forward show of an event never forwarded exits 1 naming it and where forwards are listed", async () => {
  const r = await runCli(["forward", "show", "stripe", "evt_nope"], { env });
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.equal(
    r.stderr,
    "hookledger: no forward of stripe/evt_nope; `hookledger outbox list --sender forward --source stripe` lists that source's forwards\n",
  );
});

test("hookledger forward enable of a source that never forwarded exits 1 naming the forwarding sources", async () => {
  const r = await runCli(["forward", "enable", "strpie"], { env });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stdout, "");
  assert.match(
    r.stderr,
    /^hookledger: strpie has not forwarded: no destination of that name \(forwarding sources: .*\bshop\b.*; see `hookledger forward list`\)\n$/,
  );
  assert.match(r.stderr, /\bstripe\b/);
});

test("hookledger forward with bad input exits 2 naming the problem and the fix, and changes nothing", async () => {
  const before = await destinationRow("stripe");
  for (const [args, message] of [
    [
      ["purge"],
      /unknown subcommand 'forward purge'; use list, show or enable \(see `hookledger forward --help`\)/,
    ],
    [["show", "stripe"], /give a source and an event id: hookledger forward show stripe evt_1/],
    [["show", "stripe", "evt_1", "evt_2"], /give a source and an event id/],
    [["enable"], /give one source: hookledger forward enable stripe/],
    [["enable", "stripe", "shop"], /give one source/],
    [
      ["list", "--status", "dead"],
      /unknown option '--status'; forward list takes .*--source.*hookledger forward list --help/,
    ],
  ] as const) {
    const r = await runCli(["forward", ...args], { env });
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(" "));
    assert.equal(r.stdout, "", args.join(" "));
    noStack(r.stderr);
  }
  assert.deepEqual(await destinationRow("stripe"), before, "still disabled");
});

test("hookledger forward --help exits 0 with the usage; each subcommand's --help prints its line; bare forward exits 2", async () => {
  const r = await runCli(["forward", "--help"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Usage: hookledger forward <list\|show\|enable> \[options\]$/m);
  assert.match(r.stdout, /hookledger forward show SOURCE EVENT_ID \[--json\]/);
  assert.match(r.stdout, /Examples:\n\s+hookledger forward list\n/);
  for (const sub of ["list", "show", "enable"]) {
    const one = await runCli(["forward", sub, "--help"], { env });
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, new RegExp(`^Usage: hookledger forward ${sub} `));
  }
  const bare = await runCli(["forward"], { env });
  assert.equal(bare.code, 2);
  assert.equal(bare.stdout, r.stdout);
  const top = await runCli(["--help"], { env });
  assert.match(top.stdout, /^ {2}forward {12}list forwarding destinations/m);
});

test("hookledger forward enable re-enables a destination a 410 disabled: its waiting deliveries are due now", async () => {
  const r = await runCli(["forward", "enable", "stripe"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "re-enabled forwarding of stripe; 2 waiting deliveries are due now\n");
  assert.deepEqual(await destinationRow("stripe"), {
    disabled_at: null,
    disabled_reason: null,
    paused_until: null,
  });
  const waiting = await listOutbox(t.pool, t.ledger, { source: "stripe", sender: "forward" }, 10);
  assert.ok(waiting.every((m) => m.status === "pending" && m.nextAttemptAt.getTime() <= Date.now() + 1000));

  const list = await runCli(["forward", "list", "--source", "stripe"], { env });
  assert.deepEqual(table(list.stdout), [["stripe", "enabled", "pending 2", "dead 0", "sent 0"]]);

  const again = await runCli(["forward", "enable", "stripe"], { env });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, "forwarding of stripe was not disabled\n");
});

test("hookledger forward enable --json re-enables a paused destination and prints parseable JSON", async () => {
  const r = await runCli(["forward", "enable", "shop", "--json"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { source: "shop", enabled: true, pending: 0 });
  assert.equal((await destinationRow("shop"))?.paused_until, null);
  const again = await runCli(["forward", "enable", "shop", "--json"], { env });
  assert.deepEqual(JSON.parse(again.stdout), { source: "shop", enabled: false, pending: 0 });
});
