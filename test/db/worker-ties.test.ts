import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import {
  backfillVersions,
  createPool,
  Handlers,
  type Pool,
  silentLogger,
  startWorker,
  type Worker,
} from "hookledger";
import { advanceVersion } from "../../src/ledger/advance.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

// docs/architecture.md §6: "Equal versions: the outcome never depends on which of two concurrent workers finishes
// first." Among same-version events of one entity, the one received last must win, whatever order they finish in.

let t: TestLedger;
let applied: string;
let state: string;

before(async () => {
  t = await freshLedger();
  applied = `"${t.schema}".applied`;
  state = `"${t.schema}".entity_state`;
  await t.pool.query(`create table ${applied} (event_id text not null)`);
  await t.pool.query(`create table ${state} (id text primary key, event_id text not null)`);
});

after(() => t.drop());

const ENTITIES = 60;
const EVENTS_PER_ENTITY = 4;

test("same-second events of 60 entities under 4 concurrent workers leave the last received one applied", async () => {
  const source = "ties";
  const last = new Map<string, string>();
  // Claimed one at a time, entity after entity: the receipt order is known, and each entity's events are adjacent
  // in the backlog so concurrent slots pick them together.
  for (let e = 0; e < ENTITIES; e++) {
    const entity = { type: "subscription", id: `sub_${e}`, version: 1_767_225_600 + e };
    for (let k = 0; k < EVENTS_PER_ENTITY; k++) {
      const id = `evt_${e}_${k}`;
      const r = await claimTestEvent(t.pool, t.ledger, { source, id, entity });
      assert.equal(r.status, "accepted");
      last.set(entity.id, id);
    }
  }

  // A random delay before the guard lets events of one entity reach it in any order.
  const handlers = new Handlers().on(source, "*", async (ctx) => {
    await sleep(Math.floor(Math.random() * 40));
    if (!(await ctx.advance())) return;
    await ctx.tx.query(`insert into ${applied} (event_id) values ($1)`, [ctx.event.id]);
    await ctx.tx.query(
      `insert into ${state} (id, event_id) values ($1, $2)
       on conflict (id) do update set event_id = excluded.event_id`,
      [ctx.event.entity?.id, ctx.event.id],
    );
  });
  const pools: Pool[] = [];
  const workers: Worker[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      const pool = createPool({ connectionString: t.url, role: "work", max: 5 });
      pools.push(pool);
      workers.push(
        startWorker({
          pool,
          connectionString: t.url,
          ledger: t.ledger,
          handlers,
          log: silentLogger(),
          concurrency: 4,
          pollIntervalMs: 50,
        }),
      );
    }
    await waitFor(
      "every event settled",
      async () =>
        (
          await t.pool.query<{ n: number }>(
            `select count(*)::int as n from ${t.ledger.s}.events where source = $1 and status <> 'settled'`,
            [source],
          )
        ).rows[0]?.n === 0,
      120_000,
    );
  } finally {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await Promise.all(pools.map((p) => p.end()));
  }

  const business = new Map(
    (await t.pool.query<{ id: string; event_id: string }>(`select id, event_id from ${state}`)).rows.map(
      (r) => [r.id, r.event_id],
    ),
  );
  const guard = new Map(
    (
      await t.pool.query<{ entity_id: string; dedupe_key: string }>(
        `select entity_id, dedupe_key from ${t.ledger.s}.entity_versions where entity_type = 'subscription'`,
      )
    ).rows.map((r) => [r.entity_id, r.dedupe_key]),
  );
  const wrong = [...last].filter(([id, want]) => business.get(id) !== want || guard.get(id) !== want);
  assert.deepEqual(
    wrong.map(([id, want]) => `${id}: ${business.get(id)} (guard ${guard.get(id)}), want ${want}`),
    [],
    `${wrong.length} of ${ENTITIES} entities end in an earlier event's state`,
  );

  const outcomes = await t.pool.query<{ dedupe_key: string; outcome: string }>(
    `select dedupe_key, outcome from ${t.ledger.s}.events where source = $1`,
    [source],
  );
  const writes = (await t.pool.query<{ event_id: string }>(`select event_id from ${applied}`)).rows
    .map((r) => r.event_id)
    .sort();
  const appliedIds = outcomes.rows
    .filter((r) => r.outcome === "applied")
    .map((r) => r.dedupe_key)
    .sort();
  // Each applied event wrote once; stale ones wrote nothing.
  assert.deepEqual(writes, appliedIds);
  for (const id of last.values()) assert.ok(appliedIds.includes(id), `${id} is the last received: applied`);
});

test("a version raised by backfill-versions sorts before every event of that version", async () => {
  const entity = { entityType: "subscription", entityId: "sub_seeded", source: "stripe" };
  const early = new Date("2026-01-01T00:00:05Z");
  const late = new Date("2026-01-01T00:00:10Z");
  const advance = (version: number, receivedAt: Date, seq: string, dedupeKey: string) =>
    advanceVersion(t.pool, t.ledger, { ...entity, version, receivedAt, seq, dedupeKey });
  assert.equal(await advance(100, late, "50", "evt_late_v100"), true);
  const seeded = await backfillVersions({
    pool: t.pool,
    schema: t.schema,
    entityType: "subscription",
    rows: [{ id: "sub_seeded", version: 200 }],
  });
  assert.equal(seeded.ok && seeded.raised, 1);
  // The seeded 200 carries no receipt order: an event of version 200, whenever received, still advances.
  assert.equal(await advance(200, early, "20", "evt_early_v200"), true);
  // Once it has, an equal version received earlier than it is stale; one received later advances.
  assert.equal(await advance(200, new Date("2026-01-01T00:00:01Z"), "5", "evt_earlier_v200"), false);
  assert.equal(await advance(200, early, "21", "evt_next_v200"), true);
});
