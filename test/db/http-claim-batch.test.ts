// Concurrent deliveries through the public receiver, whose claims are committed in batches (docs/architecture.md §3,
// "Concurrent claims are committed in batches"): the answers are those of one claim per delivery.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type pg from "pg";
import { claimEvent } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import {
  githubHeaders,
  ledgerCounts,
  type Reply,
  send,
  serve,
  stripeBody,
  stripeHeaders,
  testReceiver,
} from "../helpers/http.js";

let t: TestLedger;
let url: string;
let close: () => Promise<void>;
before(async () => {
  t = await freshLedger();
  const server = await serve(testReceiver(t.newPool("ingest", 10), t.ledger));
  url = server.url;
  close = server.close;
});
after(async () => {
  await close();
  await t.drop();
});

const postStripe = (id: string, extra: Record<string, unknown> = {}) => {
  const payload = stripeBody(id, extra);
  return send(`${url}/webhooks/stripe`, { headers: stripeHeaders(payload), body: payload });
};

const answers = (replies: Reply[]) => replies.map((r) => `${r.status} ${JSON.parse(r.text).status}`);
const count = (list: string[], item: string) => list.filter((x) => x === item).length;

/** The ingest sessions of this test's schema that wait on a row lock. */
const waitingClaims = "select pid from pg_stat_activity where wait_event_type = 'Lock' and query like $1";
const blockedOnLock = () =>
  waitFor("a claim to wait on the open one", async () => {
    const { rows } = await t.pool.query(waitingClaims, [`%${t.ledger.s}.events%`]);
    return rows.length > 0;
  });

/** An open transaction that has claimed the Stripe events `ids` and not committed. */
async function openClaim(ids: string[]): Promise<pg.PoolClient> {
  const holder = await t.pool.connect();
  await holder.query("begin");
  for (const id of ids) {
    const body = stripeBody(id);
    await claimEvent(holder, t.ledger, {
      source: "stripe",
      event: { dedupeKey: id, type: "t", payload: JSON.parse(body), dedupeOnBodyHash: false },
      body: Buffer.from(body),
      headers: {},
      secretIndex: 0,
      arrivedVia: "delivery",
    });
  }
  return holder;
}

test("64 concurrent new deliveries → 64 × 200 accepted, exactly 64 rows, each with its body's sha256", async () => {
  const ids = Array.from({ length: 64 }, (_, i) => `evt_many_${i}`);
  const replies = await Promise.all(ids.map((id) => postStripe(id)));
  assert.deepEqual(new Set(answers(replies)), new Set(["200 accepted"]));
  assert.deepEqual(new Set(replies.map((r) => JSON.parse(r.text).id)), new Set(ids));
  // The edge hands the hash it took for its cache to the batch (not hashed twice): it must be the stored body's.
  const { rows } = await t.pool.query(
    `select count(*)::int as n, count(*) filter (where body_sha256 = sha256(body))::int as hashed
     from ${t.ledger.s}.event_records where dedupe_key like 'evt_many_%'`,
  );
  assert.deepEqual(rows[0], { n: 64, hashed: 64 });
});

test("100 concurrent deliveries of one event → 1 accepted, 99 duplicates, duplicate count 99", async () => {
  const replies = await Promise.all(Array.from({ length: 100 }, () => postStripe("evt_storm")));
  const got = answers(replies);
  assert.equal(count(got, "200 accepted"), 1);
  assert.equal(count(got, "200 duplicate"), 99);
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_storm", "stripe"), {
    events: 1,
    duplicates: 99,
  });
});

test("a delivery racing an open claim of its event waits for the commit, then 200 duplicate", async () => {
  const holder = await openClaim(["evt_open_commit"]);
  try {
    let answered = false;
    const reply = postStripe("evt_open_commit").finally(() => {
      answered = true;
    });
    await blockedOnLock();
    assert.equal(answered, false);
    await holder.query("commit");
    assert.deepEqual(answers([await reply]), ["200 duplicate"]);
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_open_commit"), { events: 1, duplicates: 1 });
  } finally {
    holder.release();
  }
});

test("a delivery racing an open claim that rolls back → 200 accepted", async () => {
  const holder = await openClaim(["evt_open_rollback"]);
  try {
    const reply = postStripe("evt_open_rollback");
    await blockedOnLock();
    await holder.query("rollback");
    assert.deepEqual(answers([await reply]), ["200 accepted"]);
  } finally {
    holder.release();
  }
});

test("connections ended by the database mid-batch → every delivery 503, none 200, no row", async () => {
  const ids = Array.from({ length: 30 }, (_, i) => `evt_outage_${i}`);
  // Every key is held, so whatever batches the deliveries form, each waits until its connection is ended.
  const holder = await openClaim(ids);
  try {
    let done = false;
    const replies = Promise.all(ids.map((id) => postStripe(id))).finally(() => {
      done = true;
    });
    await blockedOnLock();
    const pattern = `%${t.ledger.s}.events%`;
    while (!done) {
      await t.pool.query(`select pg_terminate_backend(pid) from (${waitingClaims}) w`, [pattern]);
      await new Promise((r) => setTimeout(r, 50));
    }
    const got = await replies;
    assert.deepEqual(
      got.map((r) => r.status),
      ids.map(() => 503),
    );
    // A claim sent after its 503 would be waiting here still: end it too before the holder lets go.
    await t.pool.query(`select pg_terminate_backend(pid) from (${waitingClaims}) w`, [pattern]);
    await holder.query("rollback");
    const { rows } = await t.pool.query(
      `select count(*)::int as n from ${t.ledger.s}.events where dedupe_key like 'evt_outage_%'`,
    );
    assert.equal(rows[0].n, 0);
  } finally {
    holder.release();
  }
});

test("GitHub: one body under 20 delivery ids at once → 1 accepted, 19 duplicates naming its id", async () => {
  const payload = JSON.stringify({ ref: "refs/heads/main", after: "concurrent" });
  const replies = await Promise.all(
    Array.from({ length: 20 }, async (_, i) =>
      send(`${url}/webhooks/github`, {
        headers: await githubHeaders(payload, `guid-concurrent-${i}`, "push"),
        body: payload,
      }),
    ),
  );
  const got = answers(replies);
  assert.equal(count(got, "200 accepted"), 1, got.join(", "));
  assert.equal(count(got, "200 duplicate"), 19);
  const winner = JSON.parse(replies.find((r) => JSON.parse(r.text).status === "accepted")?.text ?? "{}").id;
  assert.deepEqual(new Set(replies.map((r) => JSON.parse(r.text).id)), new Set([winner]));
  const { rows } = await t.pool.query(
    `select count(*)::int as n from ${t.ledger.s}.events where source = 'github' and dedupe_key like 'guid-concurrent-%'`,
  );
  assert.equal(rows[0].n, 1);
});
