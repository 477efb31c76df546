import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { recordForwardsSent } from "../../src/ledger/forward-sent.js";
import { type TakenForward, takeForwards } from "../../src/ledger/forward-take.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";

// The ordered take (src/ledger/forward-take.ts) on a deep backlog: messages waiting behind their entity's head are
// deferred, so a take looks at a bounded number of rows, and they are woken when their head ends.

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

/** `count` ordered forwards of `entity` on `source`, versions 1…count, written in version order. */
async function forwards(source: string, entity: string, count: number): Promise<void> {
  await t.pool.query(
    `insert into ${t.ledger.s}.outbox (source, dedupe_key, message_key, sender, idempotency_key, payload, body,
       event_received_at, ordering_key, ordering_version)
     select $1::text, $2::text || '_' || g, '#forward', 'forward', $1::text || $2::text || g, '{}', '\\x7b7d',
       now(), $3::text, g
     from generate_series(1, $4::int) g`,
    [source, entity, JSON.stringify(["subscription", entity]), count],
  );
}

const take = (source: string, limit: number) =>
  takeForwards(t.pool, t.ledger, { sources: [source], limit, leaseMs: 60_000 });

async function deferred(source: string): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(
    `select count(*)::int as n from ${t.ledger.s}.outbox
     where source = $1 and status = 'pending' and attempts = 0 and next_attempt_at > now()`,
    [source],
  );
  return rows[0]?.n ?? 0;
}

const sent = (m: TakenForward) => ({ message: m, call: { status: 200, ms: 1, error: null, snippet: "" } });

test("takeForwards takes each entity's head only and defers the ones waiting behind it", async () => {
  await forwards("s1", "sub_a", 20);
  await forwards("s1", "sub_b", 1);
  const first = await take("s1", 10);
  assert.deepEqual(first.map((m) => m.dedupeKey).sort(), ["sub_a_1", "sub_b_1"]);
  assert.equal(await deferred("s1"), 19, "sub_a's 19 others deferred");
  assert.deepEqual(await take("s1", 10), [], "nothing else is due");
});

test("recordForwardsSent wakes the message waiting behind the head it settles", async () => {
  await forwards("s2", "sub_c", 3);
  const [head] = await take("s2", 10);
  assert.ok(head);
  assert.deepEqual(await recordForwardsSent(t.pool, t.ledger, [sent(head)]), [true]);
  assert.equal(await deferred("s2"), 0, "both woken");
  const next = await take("s2", 10);
  assert.deepEqual(
    next.map((m) => m.dedupeKey),
    ["sub_c_2"],
    "the next in version order, at once",
  );
});

test("takeForwards looks at a bounded window of a deep backlog, however many messages wait", async () => {
  await forwards("s3", "sub_d", 1000);
  const [head] = await take("s3", 1);
  assert.equal(head?.dedupeKey, "sub_d_1");
  // The window is the limit and 100 more: the head and 100 of the 999 waiting, deferred; then 101 more per take.
  assert.equal(await deferred("s3"), 100);
  assert.deepEqual(await take("s3", 1), []);
  assert.equal(await deferred("s3"), 201);
});
