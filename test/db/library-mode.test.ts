// Library mode: the app passes its own pg Pool. The claim then runs in a transaction that pins READ COMMITTED and
// synchronous_commit whatever the pool's session defaults; handlers' ORM writes share the event's transaction.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { drizzle } from "drizzle-orm/node-postgres";
import { integer, pgSchema, text } from "drizzle-orm/pg-core";
import pg from "pg";
import { isHookledgerPool } from "hookledger";
import { Handlers } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { withTestWorker } from "../helpers/worker.js";
import { claimTestEvent } from "../helpers/events.js";
import { send, serve, stripeBody, stripeHeaders, testReceiver } from "../helpers/http.js";

// Session defaults an app may well have, and under which the claim's guarantees would not hold by themselves.
const HOSTILE = "-c default_transaction_isolation=serializable -c synchronous_commit=off";

const APP = `library-mode-${process.pid}`;

/** Waits until a session of the app's pools is blocked on a lock (the racing claim really waits). */
const blockedOnLock = () =>
  waitFor("the racing claim to wait on the open one", async () => {
    const { rows } = await t.pool.query(
      "select 1 from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
      [APP],
    );
    return rows.length > 0;
  });

let t: TestLedger;
const pools: pg.Pool[] = [];
/** The app's own pool, as library mode receives it: not made by createPool, hostile session defaults. */
const appPool = (max = 4) => {
  const pool = new pg.Pool({ connectionString: t.url, options: HOSTILE, max, application_name: APP });
  pools.push(pool);
  return pool;
};

before(async () => {
  t = await freshLedger();
});
after(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await t.drop();
});

test("isHookledgerPool tells createPool's pools from the app's, whose sessions really are hostile", async () => {
  const pool = appPool();
  assert.equal(isHookledgerPool(pool), false);
  assert.equal(isHookledgerPool(t.pool), true);
  const { rows } = await pool.query(
    "select current_setting('synchronous_commit') as sc, current_setting('transaction_isolation') as iso",
  );
  assert.deepEqual(rows[0], { sc: "off", iso: "serializable" });
});

test("createPool: ingest sessions plan generically; worker sessions, where handlers run the app's SQL, choose", async () => {
  const setting = async (role: "ingest" | "work") =>
    (await t.newPool(role, 1).query("select current_setting('plan_cache_mode') as plans")).rows[0].plans;
  assert.equal(await setting("ingest"), "force_generic_plan");
  assert.equal(await setting("work"), "auto");
});

test("claimEvent on the app's pool claims inside a transaction at READ COMMITTED, synchronous_commit on, generic plans", async () => {
  const pool = appPool(1);
  const seen: { sc: string; iso: string; plans: string }[] = [];
  const spied = new WeakSet<pg.PoolClient>();
  // Reads the settings on the claim's own connection, just before its insert runs.
  pool.on("acquire", (client) => {
    if (spied.has(client)) return;
    spied.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => Promise<pg.QueryResult>;
    Object.assign(client, {
      query: async (...args: unknown[]) => {
        const name = (args[0] as { name?: string } | undefined)?.name;
        if (name?.startsWith("hookledger.")) {
          const { rows } = await query(
            `select current_setting('synchronous_commit') as sc, current_setting('transaction_isolation') as iso,
              current_setting('plan_cache_mode') as plans`,
          );
          seen.push(rows[0]);
        }
        return query(...args);
      },
    });
  });
  assert.deepEqual(await claimTestEvent(pool, t.ledger, { id: "evt_settings" }), {
    status: "accepted",
    id: "evt_settings",
  });
  assert.deepEqual(seen[0], { sc: "on", iso: "read committed", plans: "force_generic_plan" });
  // `set local`: the app's session keeps its own defaults afterwards.
  const { rows } = await pool.query(
    "select current_setting('synchronous_commit') as sc, current_setting('plan_cache_mode') as plans",
  );
  assert.deepEqual(rows[0], { sc: "off", plans: "auto" });
});

test("claimEvent on the app's pool: a duplicate racing an open claim waits for its commit, then answers duplicate", async () => {
  const pool = appPool();
  const first = await t.pool.connect();
  try {
    await first.query("begin");
    await claimTestEvent(first, t.ledger, { id: "evt_race_commit" });
    let settled = false;
    const second = claimTestEvent(pool, t.ledger, { id: "evt_race_commit" }).finally(() => {
      settled = true;
    });
    await blockedOnLock();
    assert.equal(settled, false, "the racing claim must wait for the open one");
    await first.query("commit");
    assert.deepEqual(await second, { status: "duplicate", id: "evt_race_commit", bodyMismatch: false });
  } finally {
    first.release();
  }
});

test("claimEvent on one of the app's sessions used directly (no wrapper) fails that race: the control", async () => {
  const pool = appPool();
  const first = await t.pool.connect();
  const session = await pool.connect();
  try {
    await first.query("begin");
    await claimTestEvent(first, t.ledger, { id: "evt_race_control" });
    const second = claimTestEvent(session, t.ledger, { id: "evt_race_control" });
    second.catch(() => {}); // asserted below
    await blockedOnLock();
    await first.query("commit");
    await assert.rejects(second, { code: "40001" });
  } finally {
    first.release();
    session.release();
  }
});

test("claimEvent on the app's pool: a duplicate racing an open claim that rolls back is accepted", async () => {
  const pool = appPool();
  const first = await t.pool.connect();
  try {
    await first.query("begin");
    await claimTestEvent(first, t.ledger, { id: "evt_race_rollback" });
    const second = claimTestEvent(pool, t.ledger, { id: "evt_race_rollback" });
    await blockedOnLock();
    await first.query("rollback");
    assert.equal((await second).status, "accepted");
  } finally {
    first.release();
  }
});

test("claimEvent on the app's pool that fails rolls back and returns a clean connection", async () => {
  const pool = appPool(1);
  const missing = { ...t.ledger, schema: "no_such_ledger", s: '"no_such_ledger"' };
  await assert.rejects(claimTestEvent(pool, missing, { id: "evt_fails" }), { code: "42P01" });
  // The only connection went back idle, outside any transaction: the app's next query just runs.
  assert.equal(pool.totalCount, 1);
  const { rows } = await pool.query("select now() = statement_timestamp() as fresh");
  assert.equal(rows[0].fresh, true);
});

test("the receiver on the app's pool answers accepted, then duplicate", async () => {
  const server = await serve(testReceiver(appPool(), t.ledger));
  try {
    const payload = stripeBody("evt_library_http");
    const post = () =>
      send(`${server.url}/webhooks/stripe`, { headers: stripeHeaders(payload), body: payload });
    assert.deepEqual(JSON.parse((await post()).text), { status: "accepted", id: "evt_library_http" });
    assert.deepEqual(JSON.parse((await post()).text), { status: "duplicate", id: "evt_library_http" });
  } finally {
    await server.close();
  }
});

test("drizzle(ctx.tx): a business row commits with the settle, and rolls back with a handler that throws", async () => {
  const pool = new pg.Pool({ connectionString: t.url, max: 4 });
  await t.pool.query(`create table ${t.ledger.s}.orders (id text primary key, amount integer not null)`);
  const orders = pgSchema(t.schema).table("orders", {
    id: text("id").primaryKey(),
    amount: integer("amount").notNull(),
  });
  type Order = { id: string; amount: number; fail?: boolean };
  const handlers = new Handlers()
    .on("shop", "order.paid", async (ctx) => {
      const order = ctx.event.payload as Order;
      await drizzle(ctx.tx).insert(orders).values({ id: order.id, amount: order.amount });
      if (order.fail) throw new Error("payment provider said no");
    })
    .on("shop", "order.nested", async (ctx) => {
      // Drizzle's transaction() would BEGIN on the event's transaction: refused, with a message naming why.
      await drizzle(ctx.tx).transaction(async (tx) => {
        await tx.insert(orders).values({ id: "ord_nested", amount: 1 });
      });
    });
  const claim = (id: string, type: string, payload: Order) =>
    claimTestEvent(pool, t.ledger, { source: "shop", id, type, payload });
  await claim("evt_ok", "order.paid", { id: "ord_ok", amount: 100 });
  await claim("evt_throws", "order.paid", { id: "ord_throws", amount: 5, fail: true });
  await claim("evt_nested", "order.nested", { id: "ord_nested", amount: 1 });

  // The helper ends the app's pool with the worker.
  await withTestWorker(t, pool, handlers, { pollIntervalMs: 50, retry: { maxAttempts: 1 } }, async () => {
    const states = async () =>
      (
        await t.pool.query<{
          dedupe_key: string;
          status: string;
          outcome: string | null;
          last_error: string | null;
        }>(
          `select dedupe_key, status, outcome, last_error from ${t.ledger.s}.events where source = 'shop' order by dedupe_key`,
        )
      ).rows;
    await waitFor("the shop events to settle or die", async () =>
      (await states()).every((r) => r.status === "settled" || r.status === "dead"),
    );
    const [nested, ok, throws] = await states();
    assert.deepEqual(ok, { dedupe_key: "evt_ok", status: "settled", outcome: "applied", last_error: null });
    assert.equal(throws?.status, "dead");
    assert.equal(throws?.last_error?.split("\n")[0], "payment provider said no");
    assert.equal(nested?.status, "dead");
    // Drizzle wraps the refusal ("hookledger owns the transaction …") as its cause; the ledger keeps the message.
    assert.match(nested?.last_error ?? "", /^Failed query: begin/);
    const rows = await drizzle(t.pool).select().from(orders);
    assert.deepEqual(rows, [{ id: "ord_ok", amount: 100 }]);
  });
});
