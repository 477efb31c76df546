// What operators read: /metrics, /healthz and /readyz (alone and wired into the service), and the structured logs.
import assert from "node:assert/strict";
import { createServer as createHttpServer } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { resolveConfig } from "hookledger";
import { createPool, type Pool } from "hookledger";
import { createReceiver } from "hookledger";
import { createNodeHandler } from "hookledger";
import { createOpsHandler, withOps } from "hookledger";
import { type LedgerContext, ledgerContext } from "hookledger";
import { createLogger, silentLogger } from "hookledger";
import { createMetrics } from "hookledger";
import { stripeProvider } from "hookledger";
import { startService } from "hookledger";
import { Handlers } from "hookledger";
import { startWorker } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import {
  NOW_S,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  stripeBody,
  stripeHeaders,
  stripeSignature,
} from "../helpers/http.js";
import { freePort } from "../helpers/net.js";

let t: TestLedger;
const closers: (() => Promise<unknown>)[] = [];
before(async () => {
  t = await freshLedger();
});
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => {});
  await t.drop();
});

/** A node:http server: the ops routes, and a stripe receiver behind them. */
async function opsServer(db: Pool, ledger: LedgerContext = t.ledger, timeoutMs = 500): Promise<string> {
  const metrics = createMetrics({ processMetrics: false });
  const receiver = createReceiver({
    sources: [
      { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
    ],
    db: t.newPool("ingest"),
    ledger: t.ledger,
    log: silentLogger(),
    now: () => NOW_S * 1000,
    observer: metrics.observer,
  });
  const ops = createOpsHandler({ metrics, db, ledger, timeoutMs });
  const server = createHttpServer(withOps(ops, createNodeHandler(receiver)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  );
  const address = server.address();
  return `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}
const get = (url: string, method = "GET") => send(url, { method });
const downPool = async () => {
  const pool = createPool({
    connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/test`,
    role: "admin",
  });
  closers.push(() => pool.end());
  return pool;
};

test("ops routes: /healthz and /readyz answer 200, /metrics the Prometheus text; webhooks still reach the receiver", async () => {
  const url = await opsServer(t.pool);
  const health = await get(`${url}/healthz`);
  assert.equal(health.status, 200);
  assert.deepEqual(JSON.parse(health.text), { status: "ok" });
  const ready = await get(`${url}/readyz?probe=k8s`);
  assert.equal(ready.status, 200);
  assert.deepEqual(JSON.parse(ready.text), { status: "ready" });
  const payload = stripeBody("evt_ops");
  const delivery = await send(`${url}/webhooks/stripe`, { headers: stripeHeaders(payload), body: payload });
  assert.deepEqual(JSON.parse(delivery.text), { status: "accepted", id: "evt_ops" });
  const metrics = await get(`${url}/metrics`);
  assert.equal(metrics.status, 200);
  assert.equal(metrics.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  assert.match(metrics.text, /^hookledger_deliveries_total\{source="stripe",result="accepted"\} 1$/m);
  assert.equal(metrics.headers["cache-control"], "no-store");
});

test("ops routes: HEAD answers without a body, other methods 405 with Allow", async () => {
  const url = await opsServer(t.pool);
  const head = await get(`${url}/healthz`, "HEAD");
  assert.equal(head.status, 200);
  assert.equal(head.text, "");
  const post = await send(`${url}/metrics`, { method: "POST", body: "x" });
  assert.equal(post.status, 405);
  assert.equal(post.headers.allow, "GET, HEAD");
});

test("/readyz answers 503 migrations_pending for a ledger never migrated, or migrated to an older version", async () => {
  const never = await get(`${await opsServer(t.pool, ledgerContext(`${t.schema}_none`))}/readyz`);
  assert.equal(never.status, 503);
  assert.deepEqual(JSON.parse(never.text), { status: "unavailable", reason: "migrations_pending" });

  const old = ledgerContext(`${t.schema}_old`);
  closers.push(() => t.pool.query(`drop schema if exists ${old.s} cascade`));
  await t.pool.query(`create schema ${old.s}`);
  await t.pool.query(`create table ${old.s}.migrations (id integer primary key, name text not null)`);
  await t.pool.query(`insert into ${old.s}.migrations values (1, '001_ledger.sql')`);
  const behind = await get(`${await opsServer(t.pool, old)}/readyz`);
  assert.equal(behind.status, 503);
  assert.equal(JSON.parse(behind.text).reason, "migrations_pending");
});

test("/readyz answers 503 within its timeout when the database is down or silent; /healthz stays 200", async () => {
  const refused = await get(`${await opsServer(await downPool())}/readyz`);
  assert.equal(refused.status, 503);
  assert.equal(JSON.parse(refused.text).reason, "database_unreachable");

  // Accepts connections, never answers: only the timeout ends the check.
  const sockets: Socket[] = [];
  const silent = createTcpServer((socket) => sockets.push(socket)).listen(0, "127.0.0.1");
  await new Promise((resolve) => silent.once("listening", resolve));
  closers.push(
    () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        silent.close(resolve);
      }),
  );
  const address = silent.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const pool = createPool({
    connectionString: `postgres://postgres@127.0.0.1:${port}/test`,
    role: "admin",
    connectTimeoutMs: 500,
  });
  closers.push(() => pool.end());
  const url = await opsServer(pool, t.ledger, 300);
  const timedOut = await get(`${url}/readyz`);
  assert.equal(timedOut.status, 503);
  assert.equal(JSON.parse(timedOut.text).reason, "database_timeout");
  assert.ok(timedOut.ms < 1000, `${timedOut.ms} ms`);
  assert.equal((await get(`${url}/healthz`)).status, 200);
});

test("startService serves /metrics, /healthz, /readyz on its admin listener only; the worker's attempts are counted", async () => {
  const lines: string[] = [];
  const service = await startService(
    resolveConfig(
      {
        database: { url: t.url, schema: t.schema },
        port: 0,
        sources: [{ name: "stripe", provider: "stripe", secrets: [STRIPE_SECRETS[0]] }],
        handlers: new Handlers().on("stripe", "*", async () => {}),
        worker: { pollIntervalMs: 50 },
      },
      {},
    ),
    {
      log: createLogger({ destination: { write: (line: string) => lines.push(line) } }),
      serve: true,
      work: true,
      // Nothing listens there: the service still starts and answers, through Postgres.
      redisUrl: `redis://:hunter2@127.0.0.1:${await freePort()}/0`,
    },
  );
  closers.push(() => service.stop());
  const webhooks = service.url ?? "";
  const payload = stripeBody("evt_service");
  for (const expected of ["accepted", "duplicate"]) {
    const reply = await send(`${webhooks}/webhooks/stripe`, {
      headers: stripeHeaders(payload),
      body: payload,
    });
    assert.deepEqual(JSON.parse(reply.text), { status: expected, id: "evt_service" });
  }
  // The public webhook port answers none of the operational routes (docs/architecture.md §4).
  for (const path of ["/metrics", "/readyz", "/healthz"]) {
    assert.equal((await get(`${webhooks}${path}`)).status, 404, `${path} on the webhook port`);
  }
  const url = service.adminUrl ?? "";
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, "the admin listener is on loopback by default");
  assert.notEqual(url, webhooks);
  assert.equal((await get(`${url}/healthz`)).status, 200);
  assert.equal((await get(`${url}/readyz`)).status, 200);
  assert.equal((await get(`${url}/webhooks/stripe`)).status, 404, "no webhooks on the admin listener");
  await waitFor("the attempt to be counted", async () =>
    /^hookledger_attempts_total\{[^}]*result="settled"[^}]*\} [1-9]/m.test(
      (await get(`${url}/metrics`)).text,
    ),
  );
  const text = (await get(`${url}/metrics`)).text;
  assert.match(text, /^hookledger_deliveries_total\{source="stripe",result="duplicate"\} 1$/m);
  assert.match(text, /^hookledger_backlog_up 1$/m);
  assert.match(text, /^process_resident_memory_bytes /m);
  const log = lines.join("");
  assert.match(log, /Redis duplicate cache unavailable/);
  assert.doesNotMatch(log, /hunter2/);
});

test("logs carry source, event id, type, result, outcome and durations, never a secret, a signature or a body", async () => {
  const l = await freshLedger();
  closers.push(() => l.drop());
  const lines: string[] = [];
  const log = createLogger({ level: "trace", destination: { write: (line: string) => lines.push(line) } });
  const receiver = createReceiver({
    sources: [
      { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
    ],
    db: l.newPool("ingest"),
    ledger: l.ledger,
    log,
    now: () => NOW_S * 1000,
  });
  const server = createHttpServer(createNodeHandler(receiver));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/webhooks/stripe`;

  const payload = stripeBody("evt_logged", { marker: "PAYLOAD-MARKER-7f3a" });
  const headers = stripeHeaders(payload);
  const forged = stripeSignature(payload, "whsec_forged_secret");
  assert.equal((await send(url, { headers, body: payload })).status, 200);
  assert.equal((await send(url, { headers, body: payload })).status, 200);
  assert.equal(
    (await send(url, { headers: { ...headers, "stripe-signature": forged }, body: payload })).status,
    401,
  );

  const worker = startWorker({
    pool: l.newPool("work"),
    connectionString: l.url,
    ledger: l.ledger,
    handlers: new Handlers().on("stripe", "customer.subscription.updated", async () => {}),
    log,
    pollIntervalMs: 50,
  });
  closers.push(() => worker.stop(5000));
  type Line = Record<string, unknown>;
  const parsed = () => lines.map((l) => JSON.parse(l) as Line);
  const find = (msg: string, extra: Line = {}) =>
    parsed().find((l) => l.msg === msg && Object.entries(extra).every(([k, v]) => l[k] === v));
  await waitFor(
    "the event to settle",
    async () => find("event settled", { eventId: "evt_logged" }) !== undefined,
  );

  const fields = { source: "stripe", eventId: "evt_logged", type: "customer.subscription.updated" };
  const accepted = find("delivery received", { ...fields, result: "accepted" });
  assert.equal(typeof accepted?.durationMs, "number");
  assert.ok(find("delivery received", { ...fields, result: "duplicate" }));
  assert.ok(find("delivery refused", { source: "stripe", result: "unauthorized" })?.reason);
  const settled = find("event settled", { ...fields, result: "settled", outcome: "applied" });
  assert.equal(typeof settled?.durationMs, "number");

  const all = lines.join("");
  const hex = (signature: string) => /v1=([0-9a-f]+)/.exec(signature)?.[1] ?? "missing";
  for (const secret of [...STRIPE_SECRETS, "whsec_forged_secret"]) assert.ok(!all.includes(secret), secret);
  for (const signature of [headers["stripe-signature"] ?? "missing", forged]) {
    assert.ok(!all.includes(signature), "a signature header value");
    assert.ok(!all.includes(hex(signature)), "a signature's digest");
  }
  assert.ok(!all.includes("PAYLOAD-MARKER-7f3a"), "a value from the body");
  assert.ok(!all.includes(JSON.stringify(payload).slice(1, 40)), "the raw body");
});
