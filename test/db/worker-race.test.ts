import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createPool, type Pool } from "hookledger";
import { silentLogger } from "hookledger";
import { type Handler, Handlers } from "hookledger";
import { startWorker, type Worker, type WorkerOptions } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;
let applied: string;
let state: string;

before(async () => {
  t = await freshLedger();
  applied = `"${t.schema}".applied`;
  state = `"${t.schema}".entity_state`;
  // No unique constraint: a second application of an event would show up as a second row.
  await t.pool.query(
    `create table ${applied} (event_id text not null, worker int not null, version numeric)`,
  );
  await t.pool.query(
    `create table ${state} (id text primary key, version numeric not null, event_id text not null)`,
  );
});

after(() => t.drop());

type Extra = Partial<Omit<WorkerOptions, "pool" | "connectionString" | "ledger" | "handlers" | "log">>;

/** Starts `count` workers, each in its own `work` pool as separate processes would be, runs `body`, then stops them. */
async function withWorkers(
  count: number,
  handlers: (worker: number) => Handlers,
  extra: Extra,
  body: () => Promise<void>,
): Promise<void> {
  const pools: Pool[] = [];
  const workers: Worker[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const pool = createPool({ connectionString: t.url, role: "work", max: 3 });
      pools.push(pool);
      workers.push(
        startWorker({
          pool,
          connectionString: t.url,
          ledger: t.ledger,
          handlers: handlers(i),
          log: silentLogger(),
          concurrency: 2,
          pollIntervalMs: 100,
          retry: { baseDelayMs: 10, maxDelayMs: 50 },
          ...extra,
        }),
      );
    }
    await body();
  } finally {
    await Promise.all(workers.map((w) => w.stop(10_000)));
    await Promise.all(pools.map((p) => p.end()));
  }
}

async function claimAll(ids: string[], input: (id: string) => Parameters<typeof claimTestEvent>[2]) {
  // Setup, not the claim under test: 100 claims queue for 8 connections, longer than the ingest role's 1 s
  // connect timeout on a busy machine.
  const ingest = createPool({ connectionString: t.url, role: "ingest", max: 8, connectTimeoutMs: 30_000 });
  try {
    for (let i = 0; i < ids.length; i += 100) {
      const results = await Promise.all(
        ids.slice(i, i + 100).map((id) => claimTestEvent(ingest, t.ledger, input(id))),
      );
      for (const r of results) assert.equal(r.status, "accepted");
    }
  } finally {
    await ingest.end();
  }
}

async function unsettled(source: string): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(
    `select count(*)::int as n from "${t.schema}".events where source = $1 and status <> 'settled'`,
    [source],
  );
  return rows[0]?.n ?? -1;
}

async function outcomes(source: string): Promise<Map<string, { outcome: string; attempts: number }>> {
  const { rows } = await t.pool.query<{ dedupe_key: string; outcome: string; attempts: number }>(
    `select dedupe_key, outcome, attempts from "${t.schema}".events where source = $1`,
    [source],
  );
  return new Map(rows.map((r) => [r.dedupe_key, { outcome: r.outcome, attempts: r.attempts }]));
}

/** The guarded handler of the version tests: advance, then write the entity's state and a history row. */
function guarded(worker: number): Handler {
  return async (ctx) => {
    if (!(await ctx.advance())) return;
    const version = ctx.event.entity?.version;
    await ctx.tx.query(`insert into ${applied} (event_id, worker, version) values ($1, $2, $3)`, [
      ctx.event.id,
      worker,
      version,
    ]);
    await ctx.tx.query(
      `insert into ${state} (id, version, event_id) values ($1, $2, $3)
       on conflict (id) do update set version = excluded.version, event_id = excluded.event_id`,
      [ctx.event.entity?.id, version, ctx.event.id],
    );
  };
}

test("8 workers racing over 2,000 events apply each exactly once", async () => {
  const source = "race";
  const ids = Array.from({ length: 2000 }, (_, i) => `race_${i}`);
  await claimAll(ids, (id) => ({ source, id }));
  const handlers = (worker: number) =>
    new Handlers().on(source, "*", async (ctx) => {
      await ctx.tx.query(`insert into ${applied} (event_id, worker) values ($1, $2)`, [ctx.event.id, worker]);
    });
  await withWorkers(8, handlers, {}, () =>
    waitFor("2,000 settled events", async () => (await unsettled(source)) === 0, 180_000),
  );

  const { rows } = await t.pool.query<{ total: number; distinct: number; workers: number }>(
    `select count(*)::int as total, count(distinct event_id)::int as distinct, count(distinct worker)::int as workers
     from ${applied} where event_id like 'race\\_%'`,
  );
  assert.equal(rows[0]?.total, 2000);
  assert.equal(rows[0]?.distinct, 2000);
  assert.ok((rows[0]?.workers ?? 0) >= 2, `only ${rows[0]?.workers} worker(s) took part in the race`);
  const byOutcome = await t.pool.query<{ status: string; outcome: string; attempts: number; n: number }>(
    `select status, outcome, attempts, count(*)::int as n from "${t.schema}".events where source = $1
     group by 1, 2, 3`,
    [source],
  );
  assert.deepEqual(byOutcome.rows, [{ status: "settled", outcome: "applied", attempts: 1, n: 2000 }]);
});

test("ctx.advance with versions 3, 1, 2 leaves 3 applied and settles 1 and 2 as stale", async () => {
  const source = "order";
  const entity = (version: number) => ({ type: "subscription", id: "sub_312", version });
  for (const v of [3, 1, 2])
    await claimTestEvent(t.pool, t.ledger, { source, id: `v${v}`, entity: entity(v) });
  const handlers = (w: number) => new Handlers().on(source, "*", guarded(w));
  await withWorkers(1, handlers, { concurrency: 1 }, () =>
    waitFor("3 settled events", async () => (await unsettled(source)) === 0),
  );

  const settled = await outcomes(source);
  assert.deepEqual(Object.fromEntries(settled), {
    v3: { outcome: "applied", attempts: 1 },
    v1: { outcome: "stale", attempts: 1 },
    v2: { outcome: "stale", attempts: 1 },
  });
  const guard = await t.pool.query(
    `select version::int as version, source, dedupe_key from "${t.schema}".entity_versions
     where entity_type = 'subscription' and entity_id = 'sub_312'`,
  );
  assert.deepEqual(guard.rows, [{ version: 3, source, dedupe_key: "v3" }]);
  const business = await t.pool.query(
    `select version::int as version, event_id from ${state} where id = 'sub_312'`,
  );
  assert.deepEqual(business.rows, [{ version: 3, event_id: "v3" }]);
  const writes = await t.pool.query(`select event_id from ${applied} where event_id in ('v1', 'v2', 'v3')`);
  assert.deepEqual(writes.rows, [{ event_id: "v3" }]);
});

test("ctx.advance under 4 racing workers leaves the highest of 120 shuffled versions applied", async () => {
  const source = "shuffle";
  const versions = Array.from({ length: 120 }, (_, i) => i + 1);
  for (let i = versions.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [versions[i], versions[j]] = [versions[j] as number, versions[i] as number];
  }
  await claimAll(
    versions.map((v) => `s${v}`),
    (id) => ({ source, id, entity: { type: "subscription", id: "sub_race", version: Number(id.slice(1)) } }),
  );
  const handlers = (w: number) => new Handlers().on(source, "*", guarded(w));
  await withWorkers(4, handlers, {}, () =>
    waitFor("120 settled events", async () => (await unsettled(source)) === 0, 120_000),
  );

  const guard = await t.pool.query(
    `select version::int as version, dedupe_key from "${t.schema}".entity_versions where entity_id = 'sub_race'`,
  );
  assert.deepEqual(guard.rows, [{ version: 120, dedupe_key: "s120" }]);
  const business = await t.pool.query(
    `select version::int as version, event_id from ${state} where id = 'sub_race'`,
  );
  assert.deepEqual(business.rows, [{ version: 120, event_id: "s120" }]);
  const settled = await outcomes(source);
  assert.equal(settled.get("s120")?.outcome, "applied");
  for (const [id, { outcome, attempts }] of settled) {
    assert.ok(outcome === "applied" || outcome === "stale", `${id}: ${outcome}`);
    assert.equal(attempts, 1, id);
  }
  // Writes happen only for applied events, once each.
  const writes = await t.pool.query<{ event_id: string }>(
    `select event_id from ${applied} where event_id ~ '^s[0-9]+$'`,
  );
  const written = writes.rows.map((r) => r.event_id).sort();
  const appliedIds = [...settled].filter(([, s]) => s.outcome === "applied").map(([id]) => id);
  assert.deepEqual(written, appliedIds.sort());
});

test("ctx.advance with equal versions advances: both events are applied and the later one is recorded", async () => {
  const source = "ties";
  const entity = { type: "subscription", id: "sub_tie", version: 1_767_225_600 };
  await claimTestEvent(t.pool, t.ledger, { source, id: "tie_created", entity });
  await claimTestEvent(t.pool, t.ledger, { source, id: "tie_updated", entity });
  const handlers = (w: number) => new Handlers().on(source, "*", guarded(w));
  await withWorkers(1, handlers, { concurrency: 1 }, () =>
    waitFor("2 settled events", async () => (await unsettled(source)) === 0),
  );

  assert.deepEqual(Object.fromEntries(await outcomes(source)), {
    tie_created: { outcome: "applied", attempts: 1 },
    tie_updated: { outcome: "applied", attempts: 1 },
  });
  const guard = await t.pool.query(
    `select version::bigint::text as version, dedupe_key from "${t.schema}".entity_versions
     where entity_id = 'sub_tie'`,
  );
  assert.deepEqual(guard.rows, [{ version: "1767225600", dedupe_key: "tie_updated" }]);
  const business = await t.pool.query(`select event_id from ${state} where id = 'sub_tie'`);
  assert.deepEqual(business.rows, [{ event_id: "tie_updated" }]);
});

test("an event with no handler settles as unhandled; ctx.ignore() settles as ignored", async () => {
  const source = "kinds";
  await claimTestEvent(t.pool, t.ledger, { source, id: "k_unknown", type: "nobody.listens" });
  await claimTestEvent(t.pool, t.ledger, { source: "kinds_other", id: "k_other_source" });
  await claimTestEvent(t.pool, t.ledger, { source, id: "k_ignored", type: "noise" });
  await claimTestEvent(t.pool, t.ledger, { source, id: "k_applied", type: "wanted" });
  const calls: string[] = [];
  const handlers = () =>
    new Handlers()
      .on(source, "noise", (ctx) => {
        calls.push(ctx.event.id);
        ctx.ignore();
      })
      .on(source, "wanted", (ctx) => {
        calls.push(ctx.event.id);
      });
  await withWorkers(1, handlers, {}, () =>
    waitFor(
      "4 settled events",
      async () => (await unsettled(source)) === 0 && (await unsettled("kinds_other")) === 0,
    ),
  );

  const { rows } = await t.pool.query(
    `select dedupe_key, status, outcome, attempts, last_error from "${t.schema}".events
     where source in ('kinds', 'kinds_other') order by dedupe_key`,
  );
  assert.deepEqual(rows, [
    { dedupe_key: "k_applied", status: "settled", outcome: "applied", attempts: 1, last_error: null },
    { dedupe_key: "k_ignored", status: "settled", outcome: "ignored", attempts: 1, last_error: null },
    { dedupe_key: "k_other_source", status: "settled", outcome: "unhandled", attempts: 1, last_error: null },
    { dedupe_key: "k_unknown", status: "settled", outcome: "unhandled", attempts: 1, last_error: null },
  ]);
  assert.deepEqual(calls.sort(), ["k_applied", "k_ignored"]);
});
