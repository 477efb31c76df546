import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  backfillVersions,
  claimEvent,
  createPool,
  Handlers,
  silentLogger,
  startWorker,
  stripeEventFromJson,
} from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";

let t: TestLedger;
let subscriptions: string;
const T = Date.parse("2024-01-01T00:00:10.600Z");
const seconds = Math.floor(T / 1000);

before(async () => {
  t = await freshLedger();
  subscriptions = `"${t.schema}".subscriptions`;
  await t.pool.query(
    `create table ${subscriptions} (stripe_id text primary key, status text, updated_at timestamptz)`,
  );
  await t.pool.query(
    `insert into ${subscriptions} values ('sub_old', 'active', $1), ('sub_same', 'active', $1),
     ('sub_new', 'active', $1), ('sub_null', 'active', null)`,
    [new Date(T)],
  );
  await t.pool.query(`create sequence "${t.schema}".seq`);
});

after(() => t.drop());

async function stored(id: string): Promise<string | undefined> {
  const { rows } = await t.pool.query<{ version: string }>(
    `select version::text as version from "${t.schema}".entity_versions where entity_type = 'subscription' and entity_id = $1`,
    [id],
  );
  return rows[0]?.version;
}

const stripeSql = (table: string) =>
  `select stripe_id, floor(extract(epoch from updated_at)) from ${table} order by stripe_id`;

test("backfillVersions seeds Stripe subscriptions in Stripe's scale, and a Date in unit s matches extract(epoch)", async () => {
  const first = await backfillVersions({
    pool: t.pool,
    schema: t.schema,
    entityType: "subscription",
    sql: stripeSql(subscriptions),
    source: "stripe",
    batchSize: 2,
  });
  assert.deepEqual(first, { ok: true, dryRun: false, read: 4, inserted: 3, raised: 0, kept: 0, skipped: 1 });
  assert.equal(await stored("sub_old"), String(seconds));

  const again = await backfillVersions({
    pool: t.pool,
    schema: t.schema,
    entityType: "subscription",
    rows: [{ id: "sub_old", version: new Date(T) }],
    unit: "s",
  });
  assert.deepEqual(again, { ok: true, dryRun: false, read: 1, inserted: 0, raised: 0, kept: 1, skipped: 0 });
});

test("after the backfill, a real worker settles an older Stripe event stale and applies one of the same second or newer", async () => {
  const ingest = createPool({ connectionString: t.url, role: "ingest" });
  const stripeEvent = (id: string, sub: string, created: number) => {
    const parsed = stripeEventFromJson({
      id,
      type: "customer.subscription.updated",
      created,
      data: { object: { id: sub, object: "subscription", status: "past_due" } },
    });
    assert.ok(parsed.ok);
    return claimEvent(ingest, t.ledger, {
      source: "stripe",
      event: parsed.event,
      body: Buffer.from(id),
      headers: {},
      secretIndex: 0,
      arrivedVia: "delivery",
    });
  };
  try {
    await stripeEvent("evt_old", "sub_old", seconds - 5);
    await stripeEvent("evt_same", "sub_same", seconds);
    await stripeEvent("evt_new", "sub_new", seconds + 5);
  } finally {
    await ingest.end();
  }
  const work = createPool({ connectionString: t.url, role: "work", max: 3 });
  const worker = startWorker({
    pool: work,
    connectionString: t.url,
    ledger: t.ledger,
    log: silentLogger(),
    pollIntervalMs: 100,
    handlers: new Handlers().on("stripe", "customer.subscription.updated", async (ctx) => {
      if (!(await ctx.advance())) return;
      const sub = ctx.event.payload.data.object;
      await ctx.tx.query(`update ${subscriptions} set status = $1 where stripe_id = $2`, [
        sub.status,
        sub.id,
      ]);
    }),
  });
  try {
    await waitFor("three settled events", async () => {
      const { rows } = await t.pool.query(
        `select 1 from "${t.schema}".events where source = 'stripe' and status = 'settled'`,
      );
      return rows.length === 3;
    });
  } finally {
    await worker.stop(10_000);
    await work.end();
  }
  const { rows } = await t.pool.query<{ dedupe_key: string; outcome: string }>(
    `select dedupe_key, outcome from "${t.schema}".events where source = 'stripe' order by dedupe_key`,
  );
  assert.deepEqual(rows, [
    { dedupe_key: "evt_new", outcome: "applied" },
    { dedupe_key: "evt_old", outcome: "stale" },
    { dedupe_key: "evt_same", outcome: "applied" },
  ]);
  const status = await t.pool.query<{ stripe_id: string; status: string }>(
    `select stripe_id, status from ${subscriptions} where stripe_id <> 'sub_null' order by stripe_id`,
  );
  assert.deepEqual(status.rows, [
    { stripe_id: "sub_new", status: "past_due" },
    { stripe_id: "sub_old", status: "active" },
    { stripe_id: "sub_same", status: "past_due" },
  ]);
  assert.equal(await stored("sub_new"), String(seconds + 5));
});

test("backfillVersions never lowers a stored version and raises a lower one", async () => {
  const before = await stored("sub_new"); // the worker's version, 5 s above the backfill
  const result = await backfillVersions({
    pool: t.pool,
    schema: t.schema,
    rows: [
      { entityType: "subscription", id: "sub_new", version: seconds },
      { entityType: "subscription", id: "sub_old", version: String(seconds + 60) },
      { entityType: "subscription", id: "sub_old", version: seconds + 30 },
    ],
  });
  assert.deepEqual(result, { ok: true, dryRun: false, read: 3, inserted: 0, raised: 1, kept: 2, skipped: 0 });
  assert.equal(await stored("sub_new"), before);
  assert.equal(await stored("sub_old"), String(seconds + 60));
});

test("backfillVersions with dryRun counts what would change and writes nothing", async () => {
  const snapshot = async () =>
    (await t.pool.query(`select * from "${t.schema}".entity_versions order by entity_id`)).rows;
  const was = await snapshot();
  const result = await backfillVersions({
    pool: t.pool,
    schema: t.schema,
    sql: `select 'subscription', stripe_id, floor(extract(epoch from updated_at)) + 3600 from ${subscriptions}
          union all select 'customer', 'cus_1', 1`,
    dryRun: true,
  });
  assert.deepEqual(result, { ok: true, dryRun: true, read: 5, inserted: 1, raised: 3, kept: 0, skipped: 1 });
  assert.deepEqual(await snapshot(), was);
});

test("backfillVersions answers bad SQL, writes and the wrong columns with a reason and the fix", async () => {
  const run = (sql: string, entityType?: string) =>
    backfillVersions({ pool: t.pool, schema: t.schema, sql, ...(entityType && { entityType }) });
  const missing = await run("select id, v from no_such_table", "subscription");
  assert.equal(missing.ok || missing.reason, "query_failed");
  assert.match(
    !missing.ok ? missing.detail : "",
    /the query failed: relation "no_such_table" does not exist/,
  );

  const one = await run(`select stripe_id from ${subscriptions}`, "subscription");
  assert.equal(one.ok || one.reason, "wrong_columns");
  assert.match(
    !one.ok ? one.detail : "",
    /returns 1 column \(stripe_id\): return two, \(id, version\), or three/,
  );

  const noType = await run(`select stripe_id, 1 from ${subscriptions}`);
  assert.equal(noType.ok || noType.reason, "entity_type_missing");

  const writing = await run(
    `select stripe_id, nextval('${t.schema}.seq') from ${subscriptions}`,
    "subscription",
  );
  assert.match(!writing.ok ? writing.detail : "", /read-only transaction/);
  const twoStatements = await run(
    `select stripe_id, 1 from ${subscriptions}; commit; delete from ${subscriptions}`,
    "subscription",
  );
  assert.equal(twoStatements.ok || twoStatements.reason, "query_failed");
  const { rows } = await t.pool.query(`select count(*)::int as n from ${subscriptions}`);
  assert.deepEqual(rows, [{ n: 4 }]);

  const text = await run(`select stripe_id, status from ${subscriptions}`, "subscription");
  assert.equal(text.ok || text.reason, "invalid_version");
  const dates = await run(`select stripe_id, updated_at from ${subscriptions}`, "subscription");
  assert.equal(dates.ok || dates.reason, "unit_missing");
  assert.match(!dates.ok ? dates.detail : "", /unit "s" for Stripe/);
});
