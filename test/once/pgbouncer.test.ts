// Behind PgBouncer in transaction mode (docs/operations.md, "Behind PgBouncer"), through a real PgBouncer: the
// claim, the worker and the CLI work with `pooler: "transaction"`, and a start without it, or through a pooler in a
// mode hookledger cannot work with, is refused with the fix named.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { createHookledger, createPool, PoolerMismatch, silentLogger } from "hookledger";
import pg from "pg";
import { cleanupAfter, packageConfigFile, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl, waitFor } from "../helpers/db.js";
import { serve, stripeBody, stripeHeaders } from "../helpers/http.js";
import { type Bouncer, startPgbouncer } from "../helpers/pgbouncer.js";

const { dirs, schemas } = cleanupAfter();
let transaction: Bouncer;
const direct = new pg.Pool({ connectionString: testDatabaseUrl(), max: 2 });

before(async () => {
  // Fewer server connections than the load's clients, so that transactions really do change server connections.
  transaction = await startPgbouncer({ mode: "transaction", poolSize: 4 });
});
after(async () => {
  await transaction?.stop();
  await direct.end();
});

const schema = (prefix: string) => {
  const name = `${prefix}_${randomBytes(4).toString("hex")}`;
  schemas.push(name);
  return name;
};

test('named statements through PgBouncer fail on pg\'s own pool and work on createPool({ pooler: "transaction" })', async () => {
  const bouncer = await startPgbouncer({ mode: "transaction", ignore: "options", poolSize: 2 });
  const statement = { name: "pgb_probe", text: "select $1::int as n", values: [1] };
  const hammer = (pool: pg.Pool) =>
    Promise.allSettled(Array.from({ length: 200 }, () => pool.query(statement)));
  const plain = new pg.Pool({ connectionString: bouncer.url, max: 8 });
  const pooled = createPool({ connectionString: bouncer.url, role: "admin", max: 8, pooler: "transaction" });
  try {
    const broken = (await hammer(plain)).filter((r) => r.status === "rejected");
    assert.ok(broken.length > 0, "a named statement prepared on one server connection is missing on another");
    const results = await hammer(pooled);
    assert.deepEqual(
      results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason)),
      [],
    );
  } finally {
    await plain.end();
    await pooled.end();
    await bouncer.stop();
  }
});

test('createHookledger({ pooler: "transaction" }) through PgBouncer accepts 2,000 signed deliveries at 32 clients and applies each event once', async () => {
  const name = schema("pgb");
  await direct.query(`create table ${name}_applied (event_id text not null)`);
  const hl = createHookledger({
    connectionString: transaction.url,
    pooler: "transaction",
    schema: name,
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
    worker: { concurrency: 4, pollIntervalMs: 200 },
    log: silentLogger(),
  }).on("stripe", "customer.subscription.updated", async (ctx) => {
    if (await ctx.advance("subscription", ctx.event.id, Date.now())) {
      await ctx.tx.query(`insert into ${name}_applied (event_id) values ($1)`, [ctx.event.id]);
    }
  });
  const server = await serve(hl);
  try {
    await hl.migrate();
    hl.startWorker();
    // 1,500 events, a third of them delivered twice.
    const ids = Array.from({ length: 2000 }, (_, i) => `evt_pgb_${i % 1500}`);
    const statuses: number[] = [];
    let next = 0;
    const client = async () => {
      while (next < ids.length) {
        const body = stripeBody(ids[next++] ?? "");
        const reply = await fetch(`${server.url}/webhooks/stripe`, {
          method: "POST",
          headers: stripeHeaders(body),
          body,
        });
        await reply.arrayBuffer();
        statuses.push(reply.status);
      }
    };
    await Promise.all(Array.from({ length: 32 }, client));
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      "every delivery answered 200",
    );
    await waitFor(
      "every event settled",
      async () => {
        const { rows } = await direct.query(
          `select count(*)::int as n from ${name}.events where status = 'settled'`,
        );
        return rows[0].n === 1500;
      },
      120_000,
    );
    const { rows } = await direct.query(
      `select count(*)::int as events, count(distinct event_id)::int as distinct_events from ${name}_applied`,
    );
    assert.deepEqual(rows[0], { events: 1500, distinct_events: 1500 });
  } finally {
    await server.close();
    await hl.close();
    await direct.query(`drop table if exists ${name}_applied`);
  }
});

test("hl.migrate() through PgBouncer without pooler is refused with database.pooler named", async (t) => {
  for (const ignore of ["", "options"]) {
    await t.test(`ignore_startup_parameters = ${ignore || "(none)"}`, async () => {
      const bouncer = await startPgbouncer({ mode: "transaction", ignore });
      const hl = createHookledger({
        connectionString: bouncer.url,
        schema: schema("pgb_none"),
        sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
        log: silentLogger(),
      });
      try {
        await assert.rejects(hl.migrate(), (error: Error) => {
          assert.ok(error instanceof PoolerMismatch, String(error));
          assert.match(error.message, /set database\.pooler to "transaction"/);
          return true;
        });
      } finally {
        await hl.close();
        await bouncer.stop();
      }
    });
  }
});

test("hookledger migrate through PgBouncer in statement mode exits 1 naming pool_mode", async () => {
  const bouncer = await startPgbouncer({ mode: "statement" });
  try {
    const result = await runCli(["migrate"], {
      env: {
        ...process.env,
        DATABASE_URL: bouncer.url,
        HOOKLEDGER_DATABASE_POOLER: "transaction",
        HOOKLEDGER_SCHEMA: schema("pgb_stmt"),
      },
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /statement mode .*set its pool_mode to transaction or session/);
  } finally {
    await bouncer.stop();
  }
});

const SERVE_CONFIG = `import { Handlers } from "hookledger";
export default {
  sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
  handlers: new Handlers().on("stripe", "customer.subscription.updated", async () => {}),
  // A poll this slow settles an event within seconds only when LISTEN woke the worker.
  worker: { pollIntervalMs: 60000 },
  schedules: { prune: { olderThan: "90d", every: "1h" } },
};
`;

test("hookledger serve behind PgBouncer with database.pooler and a direct URL settles on LISTEN and prunes", async () => {
  const name = schema("pgb_serve");
  const env = {
    ...process.env,
    DATABASE_URL: transaction.url,
    DATABASE_DIRECT_URL: testDatabaseUrl(),
    HOOKLEDGER_DATABASE_POOLER: "transaction",
    HOOKLEDGER_SCHEMA: name,
    PORT: "0",
  };
  const file = await packageConfigFile(dirs, ".pgbouncer-", SERVE_CONFIG);
  const served = startCli(["serve", "--config", file], { env });
  try {
    const [, url] = await served.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m);
    // The worker's first look happens at its start; this event is claimed after it.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const body = stripeBody("evt_pgb_serve");
    const reply = await fetch(`${url}/webhooks/stripe`, {
      method: "POST",
      headers: stripeHeaders(body),
      body,
    });
    assert.equal(reply.status, 200, await reply.text());
    await waitFor(
      "the event settled, woken by LISTEN",
      async () =>
        (await direct.query(`select 1 from ${name}.events where status = 'settled'`)).rowCount === 1,
      20_000,
    );
    assert.doesNotMatch(served.output(), /prune: run failed|worker polls/);
  } finally {
    await served.stop();
  }
  const refused = await runCli(["serve", "--config", file], {
    env: { ...env, DATABASE_DIRECT_URL: "" },
  });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /schedules\.prune: .*needs database\.directUrl/);
});
