import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { PoolClient } from "../../src/db/pool.js";
import { failEvent } from "../../src/ledger/fail.js";
import { countAttempts, pendingOrFailedByKey } from "../../src/ledger/pick.js";
import { lockAttempts } from "../../src/ledger/pick-lock.js";
import { uncountAttempts } from "../../src/ledger/uncount.js";
import { freshLedger, onClient, recordPlans, type TestLedger } from "../helpers/db.js";

// docs/architecture.md, "Keyed statements never plan from events_due": the worker's statements that name their
// events by key must probe them by key, whatever the statistics of events_due say. A ledger that keeps up is
// vacuumed with its backlog drained; Postgres then plans events_due as empty (an index's rows are estimated as its
// pages times the rows per page its last vacuum saw: none), so reading all of it looks cheaper than a few probes
// of the primary key, and once a backlog builds up every such statement would read all of it.

let t: TestLedger;
const BACKLOG = 20_000;
const policy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 1000 };

before(async () => {
  t = await freshLedger();
  const s = t.ledger.s;
  await t.pool.query(`alter table ${s}.events set (autovacuum_enabled = false)`);
  const insert = (prefix: string) =>
    t.pool.query(
      `with e as (
         insert into ${s}.events (source, dedupe_key, event_type, body_sha256, entity_type, entity_id,
           entity_version, next_attempt_at)
         select 'keyed', $1::text || i, 't', '\\x00', 'sub', 'sub_' || i, i, now() - interval '1 hour' + i * interval '1 ms'
         from generate_series(1, $2::int) i
         returning source, dedupe_key, received_at
       )
       insert into ${s}.event_bodies (source, dedupe_key, received_at, body, payload)
       select source, dedupe_key, received_at, '\\x7b7d', '{}' from e`,
      [prefix, BACKLOG],
    );
  // A backlog worked off: its entries in events_due all dead, then vacuumed away, the index's pages kept.
  await insert("old_");
  await t.pool.query(
    `update ${s}.events set status = 'settled', outcome = 'applied', settled_at = now() where dedupe_key like 'old\\_%'`,
  );
  await t.pool.query(`vacuum analyze ${s}.events`);
  // Then a burst, before autovacuum looks again.
  await insert("evt_");
});
after(() => t.drop());

/** Runs `fn` on a client whose every statement's plan (generic, as a long-lived worker connection's) it returns. */
async function plansOf(fn: (client: PoolClient) => Promise<unknown>): Promise<string[]> {
  const client = await t.pool.connect();
  try {
    const plans = await recordPlans(client);
    await client.query("set plan_cache_mode = force_generic_plan");
    await fn(client);
    return plans;
  } finally {
    client.release(true);
  }
}

function planOf(plans: readonly string[], marker: string): string {
  const found = plans.find((p) => p.includes(marker));
  assert.ok(found, `no plan with ${JSON.stringify(marker)} among ${plans.length}`);
  return found;
}

test("lockAttempts, failEvent and uncountAttempts probe events by key when events_due was vacuumed empty before a burst", async () => {
  const counted = await onClient(t, (client) => countAttempts(client, t.ledger, policy, 50));
  assert.equal(counted.length, 50);
  const [first, ...rest] = counted;
  assert.ok(first);
  const plans = await plansOf(async (client) => {
    await client.query("begin");
    const locked = await lockAttempts(client, t.ledger, counted);
    assert.equal(locked.length, 50);
    await client.query("commit");
    const failed = await failEvent(client, t.ledger, {
      source: first.source,
      dedupeKey: first.dedupe_key,
      error: "boom",
      maxAttempts: 10,
      retryInMs: 1000,
      attempts: first.attempts,
    });
    assert.equal(failed, "failed");
    const given = await uncountAttempts(client, t.ledger, rest);
    assert.equal(given.length, 49);
  });
  for (const [name, marker] of [
    ["the lock", "for update of e"],
    ["the failure", "failed as ("],
    ["the give-back", "ended as ("],
  ] as const) {
    const plan = planOf(plans, marker);
    assert.doesNotMatch(plan, /events_due|Seq Scan on events/, `${name} read the backlog:\n${plan}`);
    assert.match(plan, /Index Scan using events_pkey on events/, `${name}:\n${plan}`);
  }
});

test("pendingOrFailedByKey names every status of the events_status constraint but pending and failed", async () => {
  const { rows } = await t.pool.query<{ def: string }>(
    `select pg_get_constraintdef(c.oid) as def from pg_constraint c
     where c.conname = 'events_status' and c.conrelid = '${t.ledger.s}.events'::regclass`,
  );
  const allowed = [...(rows[0]?.def ?? "").matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1]);
  const excluded = [...pendingOrFailedByKey().matchAll(/'([a-z_]+)'/g)].map((m) => m[1]);
  assert.ok(allowed.length >= 4, `statuses read from ${JSON.stringify(rows[0]?.def)}`);
  assert.deepEqual(allowed.filter((status) => !excluded.includes(status)).sort(), ["failed", "pending"]);
  assert.deepEqual(
    excluded.filter((status) => !allowed.includes(status)),
    [],
  );
});
