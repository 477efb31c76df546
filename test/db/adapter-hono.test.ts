// docs/architecture.md §4 through Hono: over real HTTP with @hono/node-server and in-process with app.request(). Middleware
// that read the body as JSON first is answered 500 with its cause and fix; bytes kept by arrayBuffer() verify.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { createAdaptorServer } from "@hono/node-server";
import { Hono } from "hono";
import { createFetchHandler } from "hookledger";
import { createHonoHandler } from "hookledger/hono";
import { createLogger } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import {
  ledgerCounts,
  NOW_S,
  type Reply,
  send,
  stripeBody,
  stripeHeaders,
  testReceiver,
  postDeclaredTooLarge,
  postChunkedPastCap,
} from "../helpers/http.js";

let t: TestLedger;
let server: Server;
let url: string;
const logged: Record<string, unknown>[] = [];
const log = createLogger({ destination: { write: (line: string) => logged.push(JSON.parse(line)) } });
/** hookledger's route mounted under /api through a sub-app, next to middleware that read bodies first. */
let app: Hono;

before(async () => {
  t = await freshLedger();
  const receiver = testReceiver(t.newPool("ingest"), t.ledger);
  const handler = createHonoHandler(receiver, { log });
  app = new Hono();
  app.all("/webhooks/:source", handler);
  // A request logger that parses JSON bodies: it runs first on these paths.
  app.use("/json-first/*", async (c, next) => {
    await c.req.json().catch(() => undefined);
    await next();
  });
  app.all("/json-first/:source", handler);
  app.use("/bytes-first/*", async (c, next) => {
    await c.req.arrayBuffer();
    await next();
  });
  app.all("/bytes-first/:source", handler);
  const hooks = new Hono();
  hooks.all("/:source", handler);
  app.route("/api/hooks", hooks);
  const handle = createFetchHandler(receiver, { basePath: "/plain/webhooks" });
  app.all("/plain/webhooks/:source", (c) => handle(c.req.raw));

  server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await t?.drop();
});

const counts = (id: string, source?: string) => ledgerCounts(t.pool, t.ledger, id, source);

function post(path: string, payload: string, headers = stripeHeaders(payload)): Promise<Reply> {
  return send(`${url}${path}`, { headers, body: payload });
}

function assertJson(reply: Reply, status: number, expected: Record<string, unknown>): void {
  assert.equal(reply.status, status, reply.text);
  assert.match(String(reply.headers["content-type"]), /^application\/json/);
  assert.deepEqual(JSON.parse(reply.text), expected);
}

test("hono (node-server): POST a new event → 200 accepted, body byte-exact; again → 200 duplicate", async () => {
  const payload = stripeBody("evt_hono_new");
  assertJson(await post("/webhooks/stripe", payload), 200, { status: "accepted", id: "evt_hono_new" });
  assertJson(await post("/webhooks/stripe", payload), 200, { status: "duplicate", id: "evt_hono_new" });
  const { rows } = await t.pool.query<{ body: Buffer }>(
    `select body from ${t.ledger.s}.event_records where source = 'stripe' and dedupe_key = 'evt_hono_new'`,
  );
  assert.ok(rows[0]?.body.equals(Buffer.from(payload)), "the stored body is not the bytes sent");
  assert.deepEqual(await counts("evt_hono_new", "stripe"), { events: 1, duplicates: 1 });
});

test("hono (node-server): timestamp 301 s old → 401 uniform; unknown source → 404; GET → 405 Allow: POST", async () => {
  const payload = stripeBody("evt_hono_401");
  assertJson(await post("/webhooks/stripe", payload, stripeHeaders(payload, undefined, NOW_S - 301)), 401, {
    error: "unauthorized",
    message: "signature verification failed",
  });
  assert.equal((await post("/webhooks/stripe-eu", payload)).status, 404);
  const get = await send(`${url}/webhooks/stripe`, { method: "GET" });
  assertJson(get, 405, { error: "method_not_allowed", message: "webhook deliveries must use POST" });
  assert.equal(get.headers.allow, "POST");
  assert.deepEqual(await counts("evt_hono_401"), { events: 0, duplicates: 0 });
});

test("hono (node-server): POST declaring Content-Length 10 000 000 → 413 before reading, no row", {
  timeout: 20_000,
}, async () => {
  const answer = await postDeclaredTooLarge(`${url}/webhooks/stripe`, "evt_hono_big");
  assert.equal(answer.status, 413, answer.text);
  assert.equal(JSON.parse(answer.text).error, "payload_too_large");
  assert.deepEqual(await counts("evt_hono_big"), { events: 0, duplicates: 0 });
});

test("hono (node-server): POST chunked 3 KB then 3 KB more, never ending → 413 at the crossing byte", {
  timeout: 20_000,
}, async () => {
  const answer = await postChunkedPastCap(`${url}/webhooks/stripe`, "evt_hono_chunked");
  assert.equal(answer.status, 413, answer.text);
});

test("hono (node-server): Content-Encoding gzip → 415, no row", async () => {
  const payload = stripeBody("evt_hono_gzip");
  const reply = await post("/webhooks/stripe", payload, {
    ...stripeHeaders(payload),
    "content-encoding": "gzip",
  });
  assertJson(reply, 415, { error: "unsupported_encoding", message: "Content-Encoding must be identity" });
  assert.deepEqual(await counts("evt_hono_gzip"), { events: 0, duplicates: 0 });
});

test("hono: middleware that read c.req.json() first → 500 naming cause and fix, an error log line, no row", async () => {
  const payload = stripeBody("evt_hono_json_first");
  logged.length = 0;
  const reply = await post("/json-first/stripe", payload);
  assert.equal(reply.status, 500, reply.text);
  const body = JSON.parse(reply.text) as { error: string; fix: string };
  assert.equal(body.error, "body_already_parsed");
  assert.match(body.fix, /c\.req\.json\(\)/);
  const line = logged.find((l) => l.result === "body_already_parsed");
  assert.ok(line, "no log line");
  assert.equal(line.parsedAs, "text");
  assert.match(String(line.msg), /before hookledger.*Fix: do not read the body/);
  assert.deepEqual(await counts("evt_hono_json_first"), { events: 0, duplicates: 0 });
});

test("hono: middleware that read c.req.arrayBuffer() first → the cached bytes verify: 200 accepted", async () => {
  const payload = stripeBody("evt_hono_bytes_first");
  assertJson(await post("/bytes-first/stripe", payload), 200, {
    status: "accepted",
    id: "evt_hono_bytes_first",
  });
});

test("hono (app.request): a sub-app at /api/hooks takes the source from :source", async () => {
  const payload = stripeBody("evt_hono_routed");
  const response = await app.request("/api/hooks/stripe", {
    method: "POST",
    headers: stripeHeaders(payload),
    body: payload,
  });
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { status: "accepted", id: "evt_hono_routed" });
});

test("hono: createFetchHandler alone serves the route too (c.req.raw)", async () => {
  const payload = stripeBody("evt_hono_fetch");
  assertJson(await post("/plain/webhooks/stripe", payload), 200, {
    status: "accepted",
    id: "evt_hono_fetch",
  });
});
