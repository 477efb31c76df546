// createHookledger, the one way in: the README's library example, through the package as a user imports it.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import express from "express";
import { createHookledger, type Hookledger, silentLogger } from "hookledger";
import { createExpressHandler } from "hookledger/express";
import pg from "pg";
import { testDatabaseUrl, waitFor } from "../helpers/db.js";
import { stripeBody, stripeHeaders } from "../helpers/http.js";

const url = testDatabaseUrl();
const admin = new pg.Pool({ connectionString: url, max: 2 });
const schemas: string[] = [];
const newSchema = () => {
  const schema = `f_${randomBytes(5).toString("hex")}`;
  schemas.push(schema);
  return schema;
};
after(async () => {
  for (const schema of schemas) await admin.query(`drop schema if exists "${schema}" cascade`);
  await admin.end();
});

/** Serves `hl` with Express as the README shows, and returns the base URL. */
async function expressApp(hl: Hookledger): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.all("/webhooks/:source", createExpressHandler(hl));
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const post = (base: string, id: string, extra: Record<string, unknown> = {}) => {
  const body = stripeBody(id, extra);
  return fetch(`${base}/webhooks/stripe`, { method: "POST", headers: stripeHeaders(body), body });
};

/** A hookledger on a schema of its own whose log records the test can read. */
function loggedHookledger() {
  const schema = newSchema();
  const { log, lines } = recordingLog();
  const hl = createHookledger({
    connectionString: url,
    schema,
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
    log,
  });
  return { schema, hl, lines };
}

/** A logger whose records the test can read. */
function recordingLog() {
  const lines: { level: number; msg: string }[] = [];
  const log = silentLogger();
  const record = (level: number) => (a: unknown, b?: unknown) => {
    lines.push({ level, msg: typeof a === "string" ? a : String(b ?? "") });
  };
  return {
    lines,
    log: Object.assign(log, { info: record(30), warn: record(40), error: record(50) }) as typeof log,
  };
}

test("createHookledger with Express: migrate, receive, apply in the worker and settle; a duplicate answers duplicate", async () => {
  const schema = newSchema();
  const applied: string[] = [];
  const hl = createHookledger({
    connectionString: url,
    schema,
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
    log: silentLogger(),
    worker: { pollIntervalMs: 50 },
  }).on("stripe", "customer.subscription.updated", async (ctx) => {
    if (!(await ctx.advance())) return;
    await ctx.tx.query("select 1");
    applied.push(ctx.event.id);
  });
  assert.ok((await hl.migrate()).length > 0);
  assert.deepEqual(await hl.migrate(), []);
  hl.startWorker();
  const app = await expressApp(hl);
  try {
    const first = await post(app.url, "evt_facade_1");
    assert.equal(first.status, 200);
    assert.deepEqual(await first.json(), { status: "accepted", id: "evt_facade_1" });
    const again = await post(app.url, "evt_facade_1");
    assert.deepEqual(await again.json(), { status: "duplicate", id: "evt_facade_1" });
    await waitFor("the event to settle", async () => {
      const { rows } = await admin.query(`select status, outcome from "${schema}".events`);
      return rows[0]?.status === "settled";
    });
    const { rows } = await admin.query(`select status, outcome from "${schema}".events`);
    assert.deepEqual(rows, [{ status: "settled", outcome: "applied" }]);
    assert.deepEqual(applied, ["evt_facade_1"]);
  } finally {
    await app.close();
    await hl.close();
  }
  // close() wrote the delivery counts `hookledger stats` reads (the duplicate rate of a retrofit).
  const { rows } = await admin.query(
    `select sum(accepted)::int as accepted, sum(duplicates)::int as duplicates from "${schema}".delivery_stats`,
  );
  assert.deepEqual(rows, [{ accepted: 1, duplicates: 1 }]);
});

test("createHookledger on an unmigrated schema answers 503 and logs the command that fixes it", async () => {
  const { schema, hl, lines } = loggedHookledger();
  const app = await expressApp(hl);
  try {
    const reply = await post(app.url, "evt_unmigrated");
    assert.equal(reply.status, 503);
    assert.ok(reply.headers.get("retry-after"));
    const hint = lines.find((l) => l.level === 50);
    assert.match(hint?.msg ?? "", new RegExp(`"${schema}" is not migrated: run \`npx hookledger migrate\``));
  } finally {
    await app.close();
    await hl.close();
  }
});

test("createHookledger warns once when it accepts an event and no worker runs in the process", async () => {
  const { hl, lines } = loggedHookledger();
  await hl.migrate();
  const app = await expressApp(hl);
  try {
    await post(app.url, "evt_nowork_1");
    await post(app.url, "evt_nowork_2");
    const warnings = lines.filter((l) => l.level === 40 && /no worker runs/.test(l.msg));
    assert.equal(warnings.length, 1);
  } finally {
    await app.close();
    await hl.close();
  }
});

test("createHookledger with the app's own pool claims and works on it, and close() leaves the pool open", async () => {
  const schema = newSchema();
  const pool = new pg.Pool({ connectionString: url, max: 6 });
  const hl = createHookledger({
    pool,
    schema,
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
    log: silentLogger(),
    worker: { pollIntervalMs: 50 },
  }).on("stripe", "customer.subscription.updated", async (ctx) => {
    await ctx.tx.query(`insert into "${schema}".applied_marks values ($1)`, [ctx.event.id]);
  });
  await hl.migrate();
  await pool.query(`create table "${schema}".applied_marks (id text primary key)`);
  hl.startWorker();
  const app = await expressApp(hl);
  try {
    assert.equal((await post(app.url, "evt_pool_1")).status, 200);
    await waitFor("the handler's write", async () => {
      const { rows } = await pool.query(`select id from "${schema}".applied_marks`);
      return rows.length === 1;
    });
  } finally {
    await app.close();
    await hl.close();
  }
  assert.equal((await pool.query("select 1 as one")).rows[0].one, 1);
  await pool.end();
});

test("createHookledger refuses to start without exactly one of connectionString and pool", () => {
  assert.throws(
    () => createHookledger({ sources: [{ name: "stripe", provider: "stripe", secrets: ["x"] }] }),
    /exactly one of connectionString .* or pool/,
  );
});
