// The inline node:http middleware at its edges: refusals answered exactly as the receiver answers them, the raw
// bytes for handlers that still verify, a body parser that ran first, and an app's own pg.Pool (library mode).
import assert from "node:assert/strict";
import { test } from "node:test";
import pg from "pg";
import {
  ledgerCounts,
  STRIPE_CAP,
  send,
  serve,
  stripeBody,
  stripeHeaders,
  testReceiver,
} from "../helpers/http.js";
import { inlineBed } from "../helpers/inline-bed.js";

const bed = inlineBed();

test("a bad signature (401), an oversize body (413), a GET (405) and an unknown source (404) answer as the receiver does, with no row and no handler call", async () => {
  let calls = 0;
  const inline = await bed.start(bed.guard("enforce"), (_req, res) => {
    calls++;
    res.end("ok");
  });
  const receiver = await serve(testReceiver(bed.t.newPool("ingest"), bed.t.ledger));
  bed.closeLater(() => receiver.close());
  const forged = stripeBody("evt_forged");
  const big = stripeBody("evt_big", { pad: "x".repeat(STRIPE_CAP) });
  const cases = [
    { path: "stripe", headers: stripeHeaders(forged, "whsec_wrong"), body: forged, status: 401 },
    { path: "stripe", headers: stripeHeaders(big), body: big, status: 413 },
    { path: "stripe", method: "GET", status: 405 },
    { path: "nope", headers: stripeHeaders(forged), body: forged, status: 404 },
  ];
  for (const c of cases) {
    const options = { method: c.method ?? "POST", headers: c.headers ?? {}, ...(c.body && { body: c.body }) };
    const [a, b] = await Promise.all([
      send(`${inline.url}/webhooks/${c.path}`, options),
      send(`${receiver.url}/webhooks/${c.path}`, options),
    ]);
    assert.equal(a.status, c.status, a.text);
    assert.equal(a.text, b.text);
    assert.equal(a.headers.allow, b.headers.allow);
  }
  assert.equal(calls, 0);
  for (const id of ["evt_forged", "evt_big"]) {
    assert.deepEqual(await ledgerCounts(bed.t.pool, bed.t.ledger, id), { events: 0, duplicates: 0 });
  }
});

test("body: 'raw' hands the handler the verified bytes in req.body, byte-exact (for handlers that still verify)", async () => {
  let body: unknown;
  const server = await bed.start(
    bed.guard("enforce"),
    (req, res) => {
      body = (req as { body?: unknown }).body;
      res.end("ok");
    },
    { body: "raw" },
  );
  const payload = stripeBody("evt_raw");
  assert.equal((await bed.post(server.url, payload)).text, "ok");
  assert.ok(Buffer.isBuffer(body) && body.equals(Buffer.from(payload)), "req.body is not the bytes sent");
});

test("a body parser that ran first (a Next.js API route's default) → 500 naming the fix, no row, no handler call", async () => {
  let calls = 0;
  const server = await bed.start(
    bed.guard("enforce"),
    (_req, res) => {
      calls++;
      res.end("ok");
    },
    {
      before: async (req) => {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        (req as { body?: unknown }).body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      },
    },
  );
  const reply = await bed.post(server.url, stripeBody("evt_parsed"));
  assert.equal(reply.status, 500);
  assert.match(reply.text, /body_already_parsed.*bodyParser: false/);
  assert.equal(calls, 0);
  assert.deepEqual(await ledgerCounts(bed.t.pool, bed.t.ledger, "evt_parsed"), { events: 0, duplicates: 0 });
});

test("on an app's own pg.Pool defaulting to SERIALIZABLE (library mode), 20 racing deliveries still run the handler once", async () => {
  const appPool = new pg.Pool({
    connectionString: bed.t.url,
    max: 20,
    options: "-c default_transaction_isolation=serializable",
  });
  bed.closeLater(() => appPool.end());
  let calls = 0;
  const server = await bed.start(bed.guard("enforce", { db: appPool }), (_req, res) => {
    calls++;
    res.end("ok");
  });
  const payload = stripeBody("evt_app_pool");
  const replies = await Promise.all(Array.from({ length: 20 }, () => bed.post(server.url, payload)));
  assert.equal(replies.filter((r) => r.text === "ok").length, 1, replies.map((r) => r.text).join("\n"));
  // A copy that arrives while the first run still holds its lease is answered 503 in_flight by design (the
  // provider retries it); every other copy is a duplicate.
  const others = replies.filter((r) => r.text !== "ok");
  assert.ok(
    others.every((r) => r.text.includes('"duplicate"') || (r.status === 503 && r.text.includes("in_flight"))),
    others.map((r) => `${r.status} ${r.text}`).join("\n"),
  );
  await bed.settled("evt_app_pool");
  assert.equal(calls, 1);
});
