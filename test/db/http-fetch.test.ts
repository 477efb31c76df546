// docs/architecture.md §4 through the Web adapter (Request → Response): the same answers as node:http, on the same ledger.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, test } from "node:test";
import { createFetchHandler } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { ledgerCounts, NOW_S, stripeBody, stripeHeaders, testReceiver } from "../helpers/http.js";

const ORIGIN = "http://hookledger.test";
const STRIPE_URL = `${ORIGIN}/webhooks/stripe`;

let t: TestLedger;
let handle: (request: Request) => Promise<Response>;

before(async () => {
  t = await freshLedger();
  handle = createFetchHandler(testReceiver(t.newPool("ingest"), t.ledger));
});

after(async () => {
  await t?.drop();
});

const counts = (id: string, source?: string) => ledgerCounts(t.pool, t.ledger, id, source);

/** A streamed request body; Node's Request needs `duplex: "half"` for one, which the DOM typings lack. */
const streamed = (init: RequestInit, body: ReadableStream<Uint8Array>) =>
  new Request(STRIPE_URL, { ...init, body, duplex: "half" } as RequestInit);

function postStripe(
  payload: string,
  headers: Record<string, string> = stripeHeaders(payload),
): Promise<Response> {
  return handle(new Request(STRIPE_URL, { method: "POST", headers, body: payload }));
}

async function assertJson(
  response: Response,
  status: number,
  expected: Record<string, unknown>,
): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(JSON.parse(text), expected);
}

// A handler that waited for these bodies would never answer: the timeouts turn that hang into a failure.
const hangGuard = { timeout: 20_000 };

test("fetch adapter: POST a new event → 200 accepted and one pending row, body byte-exact", async () => {
  const payload = stripeBody("evt_fetch_new");
  await assertJson(await postStripe(payload), 200, { status: "accepted", id: "evt_fetch_new" });
  const { rows } = await t.pool.query<{ status: string; body: Buffer; body_sha256: Buffer; headers: object }>(
    `select status, body, body_sha256, headers from ${t.ledger.s}.event_records
      where source = 'stripe' and dedupe_key = 'evt_fetch_new'`,
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.status, "pending");
  assert.ok(rows[0]?.body.equals(Buffer.from(payload)), "the stored body is not the bytes sent");
  assert.ok(rows[0]?.body_sha256.equals(createHash("sha256").update(payload).digest()));
  assert.deepEqual(rows[0]?.headers, {
    "content-type": "application/json",
    "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
  });
});

test("fetch adapter: POST the same event again → 200 duplicate, still one row, duplicates.count 1", async () => {
  const payload = stripeBody("evt_fetch_dup");
  await assertJson(await postStripe(payload), 200, { status: "accepted", id: "evt_fetch_dup" });
  await assertJson(await postStripe(payload), 200, { status: "duplicate", id: "evt_fetch_dup" });
  assert.deepEqual(await counts("evt_fetch_dup", "stripe"), { events: 1, duplicates: 1 });
});

test("fetch adapter: POST with a timestamp 301 s old → 401 with the uniform body, no row", async () => {
  const payload = stripeBody("evt_fetch_stale");
  const response = await postStripe(payload, stripeHeaders(payload, undefined, NOW_S - 301));
  await assertJson(response, 401, { error: "unauthorized", message: "signature verification failed" });
  assert.deepEqual(await counts("evt_fetch_stale"), { events: 0, duplicates: 0 });
});

test("fetch adapter: POST to an unknown source or outside /webhooks/:source → 404, no row", async () => {
  const payload = stripeBody("evt_fetch_404");
  const at = (path: string) =>
    handle(
      new Request(`${ORIGIN}${path}`, { method: "POST", headers: stripeHeaders(payload), body: payload }),
    );
  const unknown = await at("/webhooks/stripe-eu");
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as { error: string }).error, "unknown_source");
  for (const path of ["/stripe", "/webhooks", "/webhooks/stripe/extra"]) {
    const outside = await at(path);
    assert.equal(outside.status, 404, path);
    assert.equal(((await outside.json()) as { error: string }).error, "not_found");
  }
  assert.deepEqual(await counts("evt_fetch_404"), { events: 0, duplicates: 0 });
});

test("fetch adapter: GET or PUT → 405 with Allow: POST, no row", async () => {
  const payload = stripeBody("evt_fetch_405");
  const get = await handle(new Request(STRIPE_URL));
  const put = await handle(
    new Request(STRIPE_URL, { method: "PUT", headers: stripeHeaders(payload), body: payload }),
  );
  for (const response of [get, put]) {
    assert.equal(response.status, 405);
    assert.equal(response.headers.get("allow"), "POST");
    assert.equal(((await response.json()) as { error: string }).error, "method_not_allowed");
  }
  assert.deepEqual(await counts("evt_fetch_405"), { events: 0, duplicates: 0 });
});

test(
  "fetch adapter: POST declaring Content-Length 10 000 000 → 413 without reading the body, no row",
  hangGuard,
  async () => {
    let pulls = 0;
    // A body that never yields a byte: reading it at all would hang.
    const body = new ReadableStream<Uint8Array>({
      pull: () => {
        pulls++;
        return new Promise<void>(() => {});
      },
    });
    const headers = { ...stripeHeaders(stripeBody("evt_fetch_declared")), "content-length": "10000000" };
    const response = await handle(streamed({ method: "POST", headers }, body));
    await assertJson(response, 413, {
      error: "payload_too_large",
      message: "the body exceeds this source's size limit",
    });
    assert.ok(pulls <= 1, `the body was pulled ${pulls} times`);
    assert.deepEqual(await counts("evt_fetch_declared"), { events: 0, duplicates: 0 });
  },
);

test(
  "fetch adapter: POST a stream of 3 KB then 3 KB more, never closed → 413 at the crossing byte, stream cancelled",
  hangGuard,
  async () => {
    const chunks = [new Uint8Array(3 * 1024).fill(0x61), new Uint8Array(3 * 1024).fill(0x62)];
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else return new Promise<void>(() => {});
      },
      cancel() {
        cancelled = true;
      },
    });
    const response = await handle(streamed({ method: "POST", headers: stripeHeaders("{}") }, body));
    await assertJson(response, 413, {
      error: "payload_too_large",
      message: "the body exceeds this source's size limit",
    });
    assert.equal(cancelled, true, "the rest of the stream was not cancelled");
    const { rows } = await t.pool.query(
      `select 1 from ${t.ledger.s}.event_records where octet_length(body) > 4096`,
    );
    assert.equal(rows.length, 0);
  },
);

test("fetch adapter: POST with Content-Encoding gzip → 415, no row; identity → 200 accepted", async () => {
  const payload = stripeBody("evt_fetch_encoding");
  const post = (encoding: string) =>
    postStripe(payload, { ...stripeHeaders(payload), "content-encoding": encoding });
  await assertJson(await post("gzip"), 415, {
    error: "unsupported_encoding",
    message: "Content-Encoding must be identity",
  });
  assert.deepEqual(await counts("evt_fetch_encoding"), { events: 0, duplicates: 0 });
  await assertJson(await post("identity"), 200, { status: "accepted", id: "evt_fetch_encoding" });
  assert.deepEqual(await counts("evt_fetch_encoding", "stripe"), { events: 1, duplicates: 0 });
});
