// docs/architecture.md §7 through the node:http inline middleware on real Postgres: enforce answers duplicates without the
// handler, shadow runs it and counts a would-skip, racing deliveries run the handler once, and HOOKLEDGER_MODE
// flips the mode on the same ledger without a migration.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { NodeGuardedHandler } from "hookledger";
import type { DeliveryReport } from "hookledger";
import { countAttempts } from "../../src/ledger/pick.js";
import { waitFor } from "../helpers/db.js";
import { ledgerCounts, send, stripeBody, githubHeaders } from "../helpers/http.js";
import { inlineBed } from "../helpers/inline-bed.js";

const bed = inlineBed();
const idOf = (payload: unknown) => (payload as { id: string }).id;

test("enforce: a new event runs the handler with the parsed payload and settles applied; its duplicate answers 200 duplicate without the handler", async () => {
  const calls: string[] = [];
  const server = await bed.start(bed.guard("enforce"), (req, res, ticket) => {
    calls.push(idOf(ticket.event.payload));
    assert.deepEqual((req as { body?: unknown }).body, ticket.event.payload);
    res.writeHead(200, { "content-type": "text/plain" }).end("handled");
  });
  const payload = stripeBody("evt_enforce");
  const first = await bed.post(server.url, payload);
  assert.equal(first.status, 200);
  assert.equal(first.text, "handled");
  await bed.settled("evt_enforce");
  bed.assertDuplicate(await bed.post(server.url, payload, 30), "evt_enforce");
  assert.deepEqual(calls, ["evt_enforce"]);
  assert.deepEqual(await bed.outcome("evt_enforce"), {
    status: "settled",
    outcome: "applied",
    attempts: 1,
    last_error: null,
  });
  assert.deepEqual(await ledgerCounts(bed.t.pool, bed.t.ledger, "evt_enforce", "stripe"), {
    events: 1,
    duplicates: 1,
  });
});

test("shadow: a duplicate still runs the handler, with wouldSkip, is counted as a duplicate and reported as would-skip", async () => {
  const reports: DeliveryReport[] = [];
  const calls: boolean[] = [];
  const g = bed.guard("shadow", { observer: { delivery: (r) => reports.push(r) } });
  assert.equal(g.mode, "shadow");
  const server = await bed.start(g, (_req, res, ticket) => {
    calls.push(ticket.wouldSkip);
    res.end("handled");
  });
  const payload = stripeBody("evt_shadow");
  assert.equal((await bed.post(server.url, payload)).text, "handled");
  await bed.settled("evt_shadow");
  const again = await bed.post(server.url, payload, 30);
  assert.equal(again.status, 200);
  assert.equal(again.text, "handled", "shadow mode answers what the app's handler answers");
  assert.deepEqual(calls, [false, true]);
  assert.deepEqual(
    reports.map((r) => ({ result: r.result, wouldSkip: r.wouldSkip ?? false })),
    [
      { result: "accepted", wouldSkip: false },
      { result: "duplicate", wouldSkip: true },
    ],
  );
  // The would-skip run belongs to no lease: the first delivery's settled row is untouched.
  assert.equal((await bed.row("evt_shadow"))?.attempts, 1);
  assert.deepEqual(await ledgerCounts(bed.t.pool, bed.t.ledger, "evt_shadow", "stripe"), {
    events: 1,
    duplicates: 1,
  });
});

test("enforce: 20 clients deliver one new event at once → the handler runs once and 19 answer 503 in_flight while it holds its lease; the row is inline and never picked by a worker", async () => {
  let calls = 0;
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const server = await bed.start(bed.guard("enforce"), async (_req, res) => {
    calls++;
    await gate;
    res.end("ok");
  });
  const payload = stripeBody("evt_race");
  let answered = 0;
  const replies = Array.from({ length: 20 }, () =>
    bed.post(server.url, payload).then((r) => {
      answered++;
      return r;
    }),
  );
  await waitFor("19 deliveries answered while the first run holds its lease", async () => answered === 19);
  const { rows } = await bed.t.pool.query(
    `select status, next_attempt_at > now() + interval '50 seconds' as leased
       from ${bed.t.ledger.s}.events where dedupe_key = 'evt_race'`,
  );
  assert.deepEqual(rows, [{ status: "inline", leased: true }]);
  const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };
  const counter = await bed.t.pool.connect();
  try {
    assert.deepEqual(await countAttempts(counter, bed.t.ledger, policy, 50), []);
  } finally {
    counter.release();
  }
  release();
  const all = await Promise.all(replies);
  assert.equal(all.filter((r) => r.text === "ok").length, 1);
  // A 200 would be final for the provider while the first run may still fail: the others are asked to retry.
  const retried = all.filter((r) => r.text !== "ok");
  assert.ok(retried.every((r) => r.status === 503 && JSON.parse(r.text).error === "in_flight"));
  assert.ok(retried.every((r) => r.headers["retry-after"] === "5"));
  await bed.settled("evt_race");
  assert.equal(calls, 1);
  const after = await bed.post(server.url, payload);
  assert.deepEqual(
    JSON.parse(after.text),
    { status: "duplicate", id: "evt_race" },
    "settled: now a duplicate",
  );
});

test("a GitHub body re-sent under a new X-GitHub-Delivery is a duplicate of the first delivery (enforce)", async () => {
  let calls = 0;
  const server = await bed.start(bed.guard("enforce"), (_req, res) => {
    calls++;
    res.end("ok");
  });
  const payload = JSON.stringify({ action: "opened", number: 9, pull_request: { id: 3 } });
  const postGithub = async (delivery: string) =>
    send(`${server.url}/webhooks/github`, {
      headers: await githubHeaders(payload, delivery, "pull_request"),
      body: payload,
    });
  assert.equal((await postGithub("7c1d5a40-0000-4000-8000-000000000001")).text, "ok");
  // The run settles just after its answer; until then a copy is in flight (503), not a duplicate.
  await waitFor("the first run to settle", async () => {
    const { rows } = await bed.t.pool.query(
      `select 1 from ${bed.t.ledger.s}.events where source = 'github' and status = 'settled'`,
    );
    return rows.length === 1;
  });
  bed.assertDuplicate(
    await postGithub("7c1d5a40-0000-4000-8000-000000000002"),
    "7c1d5a40-0000-4000-8000-000000000001",
  );
  assert.equal(calls, 1);
});

test("HOOKLEDGER_MODE=shadow, then =enforce on the same ledger: no migration between, and duplicates are skipped from then on", async () => {
  const migrations = async () =>
    (await bed.t.pool.query(`select count(*)::int as n from ${bed.t.ledger.s}.migrations`)).rows[0]
      .n as number;
  const applied = await migrations();
  const saved = process.env.HOOKLEDGER_MODE;
  try {
    let calls = 0;
    const handler: NodeGuardedHandler = (_req, res) => {
      calls++;
      res.end("ok");
    };
    process.env.HOOKLEDGER_MODE = "shadow";
    const shadow = bed.guard();
    assert.equal(shadow.mode, "shadow");
    const before = await bed.start(shadow, handler);
    const payload = stripeBody("evt_flip");
    await bed.post(before.url, payload);
    await bed.settled("evt_flip");
    assert.equal((await bed.post(before.url, payload, 10)).text, "ok");
    assert.equal(calls, 2);

    process.env.HOOKLEDGER_MODE = "enforce";
    const enforce = bed.guard();
    assert.equal(enforce.mode, "enforce");
    const afterFlip = await bed.start(enforce, handler);
    bed.assertDuplicate(await bed.post(afterFlip.url, payload, 20), "evt_flip");
    assert.equal(calls, 2);
    assert.equal(await migrations(), applied);
    assert.equal((await bed.row("evt_flip"))?.attempts, 1);
    assert.deepEqual(await ledgerCounts(bed.t.pool, bed.t.ledger, "evt_flip", "stripe"), {
      events: 1,
      duplicates: 2,
    });
  } finally {
    if (saved === undefined) delete process.env.HOOKLEDGER_MODE;
    else process.env.HOOKLEDGER_MODE = saved;
  }
});

test("HOOKLEDGER_MODE=enforcing → createInlineGuard throws naming the variable and the two values", () => {
  const saved = process.env.HOOKLEDGER_MODE;
  try {
    process.env.HOOKLEDGER_MODE = "enforcing";
    assert.throws(() => bed.guard(), /HOOKLEDGER_MODE is "enforcing"; set it to "shadow" .* or "enforce"/);
    delete process.env.HOOKLEDGER_MODE;
    assert.equal(bed.guard().mode, "shadow");
    assert.throws(() => bed.guard(undefined, { leaseMs: 0 }), /leaseMs must be a positive whole number/);
  } finally {
    if (saved === undefined) delete process.env.HOOKLEDGER_MODE;
    else process.env.HOOKLEDGER_MODE = saved;
  }
});
