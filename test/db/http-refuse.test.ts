// docs/architecture.md §4 through the node:http adapter: every refusal (401, 400, 404, 405, 413, 415), each leaving no row.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createLogger, createReceiver, stripeProvider } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import {
  ledgerCounts,
  NOW_S,
  open,
  type Reply,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  serve,
  stripeBody,
  stripeHeaders,
  stripeSignature,
  testReceiver,
  postDeclaredTooLarge,
  postChunkedPastCap,
} from "../helpers/http.js";

let t: TestLedger;
let server: { url: string; close(): Promise<void> };
let stripeUrl: string;

before(async () => {
  t = await freshLedger();
  server = await serve(testReceiver(t.newPool("ingest"), t.ledger));
  stripeUrl = `${server.url}/webhooks/stripe`;
});

after(async () => {
  await server?.close();
  await t?.drop();
});

/** Every row of the ledger: a refusal must leave both numbers as they were. */
async function totals(): Promise<{ events: number; duplicates: number }> {
  const { rows } = await t.pool.query<{ events: number; duplicates: number }>(
    `select (select count(*)::int from ${t.ledger.s}.events) as events,
            (select coalesce(sum(count), 0)::int from ${t.ledger.s}.duplicates) as duplicates`,
  );
  assert.ok(rows[0]);
  return rows[0];
}

function assertError(reply: Reply, status: number, error: string): Record<string, unknown> {
  assert.equal(reply.status, status, reply.text);
  assert.match(String(reply.headers["content-type"]), /^application\/json/);
  const body = JSON.parse(reply.text) as Record<string, unknown>;
  assert.equal(body.error, error);
  assert.equal(typeof body.message, "string");
  return body;
}

const withoutDate = ({ date: _, ...headers }: Reply["headers"]) => headers;

test("POST with a missing, malformed or wrong signature, a tampered body, a timestamp 301 s old or ahead, or a retired secret → 401 with one uniform body, no row", async () => {
  const payload = stripeBody("evt_unauthorized");
  const signed = stripeHeaders(payload);
  const { "stripe-signature": _, ...unsigned } = signed;
  const causes: [cause: string, headers: Record<string, string>, body: string][] = [
    ["missing header", unsigned, payload],
    ["malformed header", { ...unsigned, "stripe-signature": "garbage" }, payload],
    ["wrong signature", { ...unsigned, "stripe-signature": `t=${NOW_S},v1=${"0".repeat(64)}` }, payload],
    ["tampered body", signed, payload.replace("active", "paused")],
    ["timestamp 301 s old", stripeHeaders(payload, undefined, NOW_S - 301), payload],
    ["timestamp 301 s in the future", stripeHeaders(payload, undefined, NOW_S + 301), payload],
    ["secret no longer configured", stripeHeaders(payload, "whsec_test_retired"), payload],
  ];
  const replies: [string, Reply][] = [];
  for (const [cause, headers, body] of causes)
    replies.push([cause, await send(stripeUrl, { headers, body })]);

  const [, first] = replies[0] ?? assert.fail("no reply");
  assert.deepEqual(assertError(first, 401, "unauthorized"), {
    error: "unauthorized",
    message: "signature verification failed",
  });
  for (const [cause, reply] of replies) {
    assert.equal(reply.status, 401, cause);
    assert.ok(reply.raw.equals(first.raw), `${cause}: ${reply.text} differs from ${first.text}`);
    assert.deepEqual(withoutDate(reply.headers), withoutDate(first.headers), cause);
  }
  assert.doesNotMatch(
    first.text,
    /timestamp|window|tolerance|expired|future|\bold\b|secret|whsec|missing|malformed|mismatch|tamper|v1=/i,
  );
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_unauthorized"), { events: 0, duplicates: 0 });
  assert.deepEqual(await totals(), { events: 0, duplicates: 0 });
});

test("POST a verified body that is not JSON → 400 naming the problem, no row", async () => {
  const before = await totals();
  const payload = "id=evt_not_json&type=charge.succeeded";
  const body = assertError(
    await send(stripeUrl, { headers: stripeHeaders(payload), body: payload }),
    400,
    "malformed",
  );
  assert.equal(body.detail, "the body must be a JSON object");
  assert.deepEqual(await totals(), before);
});

test("POST a verified JSON event without id → 400 naming the missing id, no row", async () => {
  const before = await totals();
  const payload = JSON.stringify({ object: "event", type: "charge.succeeded", created: NOW_S });
  const body = assertError(
    await send(stripeUrl, { headers: stripeHeaders(payload), body: payload }),
    400,
    "malformed",
  );
  assert.match(String(body.detail), /`id`/);
  assert.deepEqual(await totals(), before);
});

test("POST to an unknown source → 404, no row", async () => {
  const payload = stripeBody("evt_unknown_source");
  const reply = await send(`${server.url}/webhooks/stripe-eu`, {
    headers: stripeHeaders(payload),
    body: payload,
  });
  assertError(reply, 404, "unknown_source");
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_unknown_source"), { events: 0, duplicates: 0 });
});

test("POST to a path outside /webhooks/:source → 404, no row", async () => {
  const payload = stripeBody("evt_elsewhere");
  for (const path of ["/stripe", "/webhooks", "/webhooks/", "/webhooks/stripe/extra", "/hooks/stripe"]) {
    const reply = await send(`${server.url}${path}`, { headers: stripeHeaders(payload), body: payload });
    assertError(reply, 404, "not_found");
  }
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_elsewhere"), { events: 0, duplicates: 0 });
});

test("GET or PUT → 405 with Allow: POST, no row", async () => {
  const payload = stripeBody("evt_wrong_method");
  const get = await send(stripeUrl, { method: "GET" });
  const put = await send(stripeUrl, { method: "PUT", headers: stripeHeaders(payload), body: payload });
  for (const reply of [get, put]) {
    assertError(reply, 405, "method_not_allowed");
    assert.equal(reply.headers.allow, "POST");
  }
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_wrong_method"), { events: 0, duplicates: 0 });
});

// A server that waited for the body would never answer these: the timeouts turn that hang into a failure.
test("POST declaring Content-Length 10 000 000 and sending no body → 413 decided before buffering, no row", {
  timeout: 20_000,
}, async () => {
  const before = await totals();
  const answer = await postDeclaredTooLarge(stripeUrl, "evt_declared_too_large");
  assertError(answer, 413, "payload_too_large");
  // The rest of the declared body will never be read, so the connection cannot carry another request.
  assert.equal(answer.headers.connection, "close");
  assert.deepEqual(await totals(), before);
});

test("POST chunked, 3 KB then 3 KB more, never ending → 413 at the crossing byte, no row", {
  timeout: 20_000,
}, async () => {
  const before = await totals();
  const answer = await postChunkedPastCap(stripeUrl, "evt_chunked");
  assertError(answer, 413, "payload_too_large");
  assert.equal(answer.headers.connection, "close");
  assert.deepEqual(await totals(), before);
});

test("POST chunked at exactly the 4096-byte cap → 200 accepted; one byte more → 413, no row", async () => {
  const sized = (id: string, bytes: number) => {
    const bare = stripeBody(id, { padding: "" });
    return stripeBody(id, { padding: "x".repeat(bytes - Buffer.byteLength(bare)) });
  };
  const postChunked = (payload: string) => {
    const { req, reply } = open(stripeUrl, {
      headers: { ...stripeHeaders(payload), "transfer-encoding": "chunked" },
    });
    const bytes = Buffer.from(payload);
    req.write(bytes.subarray(0, 1000));
    req.end(bytes.subarray(1000));
    return reply;
  };
  const atCap = sized("evt_at_cap", STRIPE_CAP);
  const overCap = sized("evt_over_cap", STRIPE_CAP + 1);
  assert.equal(Buffer.byteLength(atCap), STRIPE_CAP);
  assert.equal(Buffer.byteLength(overCap), STRIPE_CAP + 1);

  const accepted = await postChunked(atCap);
  assert.equal(accepted.status, 200, accepted.text);
  assert.deepEqual(JSON.parse(accepted.text), { status: "accepted", id: "evt_at_cap" });
  assertError(await postChunked(overCap), 413, "payload_too_large");
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_at_cap", "stripe"), {
    events: 1,
    duplicates: 0,
  });
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_over_cap"), { events: 0, duplicates: 0 });
});

test("a sender that goes away mid-body → logged with the source, no row; the server answers the next delivery", async () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "info",
    format: "json",
    destination: { write: (l: string) => lines.push(l) },
  });
  const own = await serve(
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      ],
      db: t.newPool("ingest"),
      ledger: t.ledger,
      log,
      now: () => NOW_S * 1000,
    }),
  );
  try {
    const url = `${own.url}/webhooks/stripe`;
    const payload = stripeBody("evt_gone_mid_body");
    const { req, reply } = open(url, {
      headers: { ...stripeHeaders(payload), "content-length": Buffer.byteLength(payload) },
    });
    reply.catch(() => {}); // the client itself ends the exchange
    req.write(payload.slice(0, 100));
    await new Promise((resolve) => setTimeout(resolve, 100));
    req.destroy();
    await waitFor("the log line", async () =>
      lines.some((l) => l.includes("request body could not be read")),
    );
    const line = JSON.parse(lines.find((l) => l.includes("request body could not be read")) ?? "{}");
    assert.equal(line.source, "stripe");
    assert.equal(line.level, 40);
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_gone_mid_body"), { events: 0, duplicates: 0 });
    const next = stripeBody("evt_after_gone");
    const answer = await send(url, { headers: stripeHeaders(next), body: next });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers["content-length"], String(Buffer.byteLength(answer.text)));
  } finally {
    await own.close();
  }
});

test("POST with Content-Encoding gzip → 415, no row; Content-Encoding identity → 200 accepted", async () => {
  const payload = stripeBody("evt_encoding");
  const signature = stripeSignature(payload);
  const post = (encoding: string) =>
    send(stripeUrl, {
      headers: {
        "content-type": "application/json",
        "content-encoding": encoding,
        "stripe-signature": signature,
      },
      body: payload,
    });
  assertError(await post("gzip"), 415, "unsupported_encoding");
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_encoding"), { events: 0, duplicates: 0 });

  const identity = await post("identity");
  assert.equal(identity.status, 200, identity.text);
  assert.deepEqual(JSON.parse(identity.text), { status: "accepted", id: "evt_encoding" });
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "evt_encoding", "stripe"), {
    events: 1,
    duplicates: 0,
  });
});
