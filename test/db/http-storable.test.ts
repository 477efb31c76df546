// docs/architecture.md §4, "verified, but a value the ledger cannot hold as it is": every such delivery gets a
// definite answer over HTTP (stored with the raw bytes exact, or a 4xx naming the reason), never a 503 the
// provider would retry until it gives up.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import type { Pool } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { NOW_S } from "../helpers/http.js";
import {
  assertStored,
  ship,
  type StorableBed,
  storableBed,
  storedRow,
  stripeText,
} from "../helpers/storable.js";

let t: TestLedger;
let ingest: Pool;
let bed: StorableBed;

before(async () => {
  t = await freshLedger();
  ingest = t.newPool("ingest");
  bed = await storableBed(t, ingest);
});

after(async () => {
  await bed?.close();
  await t?.drop();
});

const hashed = (key: string) => `sha256:${createHash("sha256").update(JSON.stringify(key)).digest("hex")}`;
const answerOf = (text: string) => JSON.parse(text) as { status: string; id: string };

function warned(id: string, change: RegExp): void {
  const line = bed.logged.find(
    (l) =>
      l.level === 40 && l.eventId === id && (l.changes as string[] | undefined)?.some((c) => change.test(c)),
  );
  assert.ok(line, `no warning matching ${change} for ${id}: ${JSON.stringify(bed.logged.slice(-3))}`);
}

test("a lone surrogate in a string is stored: raw bytes exact, U+FFFD in the payload", async () => {
  const body = stripeText({ id: '"evt_surrogate"', inner: '"note":"a\\ud800b","pair":"\\ud83d\\ude00"' });
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  const object = (row.payload as { data: { object: Record<string, string> } }).data.object;
  assert.equal(object.note, "a\ufffdb");
  assert.equal(object.pair, "😀", "a valid surrogate pair is kept");
});

test("NUL in an object key is stored: the key holds U+FFFD in the payload", async () => {
  const body = stripeText({ id: '"evt_nul_key"', inner: '"a\\u0000b":1,"\\ud800":2' });
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  const object = (row.payload as { data: { object: Record<string, number> } }).data.object;
  assert.equal(object["a\ufffdb"], 1);
  assert.equal(object["\ufffd"], 2);
});

test("NUL or a lone surrogate in the event id: stored under a stable hash, duplicates dedupe, keys stay distinct", async () => {
  const nulId = "evt_\u0000a";
  const body = stripeText({ id: '"evt_\\u0000a"' });
  const first = await ship(bed, { provider: "stripe", body });
  const row = await assertStored(t, "stripe", first, body);
  assert.equal(row.dedupe_key, hashed(nulId));
  warned(hashed(nulId), /dedupe key/);
  const again = await ship(bed, { provider: "stripe", body });
  assert.deepEqual(answerOf(again.text), { status: "duplicate", id: hashed(nulId) });

  // U+FFFD in place of the NUL would make these the same key and lose one event as a "duplicate".
  const other = stripeText({ id: '"evt_\\ufffda"' });
  assert.deepEqual(answerOf((await ship(bed, { provider: "stripe", body: other })).text), {
    status: "accepted",
    id: "evt_\ufffda",
  });
  const surrogates = ['"evt_\\ud800"', '"evt_\\ud801"'];
  const ids = new Set<string>();
  for (const id of surrogates) {
    const text = stripeText({ id });
    ids.add(
      (await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body: text }), text)).dedupe_key,
    );
  }
  assert.equal(ids.size, 2, "two lone surrogates must not share a key");
});

test("NUL and a lone surrogate in the event type are stored with U+FFFD", async () => {
  const body = stripeText({ id: '"evt_nul_type"', type: '"invoice.\\u0000paid\\udc00"' });
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  assert.equal(row.event_type, "invoice.\ufffdpaid\ufffd");
  warned("evt_nul_type", /type/);
});

test("JSON nested 10,000 deep answers 400 naming the depth; the receiver keeps serving", async () => {
  const deep = `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`;
  const arrays = `${"[".repeat(10_000)}${"]".repeat(10_000)}`;
  for (const [id, nested] of [
    ["evt_deep_objects", deep],
    ["evt_deep_arrays", arrays],
  ] as const) {
    const body = stripeText({ id: `"${id}"`, inner: `"deep":${nested}` });
    const reply = await ship(bed, { provider: "stripe", body });
    assert.equal(reply.status, 400, reply.text);
    assert.match(reply.text, /nest/);
    assert.equal(await storedRow(t, "stripe", id), undefined);
  }
  const ordinary = stripeText({
    id: '"evt_after_deep"',
    inner: `"shallow":${'{"a":'.repeat(50)}1${"}".repeat(50)}`,
  });
  await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body: ordinary }), ordinary);
});

test("an id over the index row limit is stored under its hash; a retry is a duplicate", async () => {
  const long = `evt_${randomBytes(2048).toString("base64")}`; // ~2.7 KB, incompressible
  const body = stripeText({ id: JSON.stringify(long) });
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  assert.equal(row.dedupe_key, hashed(long));
  assert.deepEqual(answerOf((await ship(bed, { provider: "stripe", body })).text), {
    status: "duplicate",
    id: hashed(long),
  });

  const delivery = randomBytes(3000).toString("hex"); // an unsigned id header, 6 KB
  const payload = '{"action":"opened","number":1}';
  const reply = await ship(bed, { provider: "github", body: payload, id: delivery, type: "issues" });
  const stored = await assertStored(t, "github", reply, payload);
  assert.equal(stored.dedupe_key, hashed(delivery));
});

test("an entity id over the index row limit is hashed too, so the worker's guard can hold it", async () => {
  const entity = `sub_${randomBytes(2048).toString("base64")}`;
  const body = `{"id":"evt_long_entity","object":"event","type":"a.b","created":${NOW_S},"data":{"object":{"id":${JSON.stringify(entity)},"object":"subscription"}}}`;
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  assert.equal(row.entity_id, hashed(entity));
});

test("Stripe `created` 1e20: stored without a time (warned), the version kept", async () => {
  const body = stripeText({ id: '"evt_created_1e20"', created: "1e20" });
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  assert.equal(row.occurred_at, null);
  assert.equal(row.entity_version, "100000000000000000000");
  warned("evt_created_1e20", /occurred_at/);
});

test("out-of-range ISO dates (Paddle occurred_at, Shopify's unsigned X-Shopify-Triggered-At) are dropped, never a 503", async () => {
  const paddle = `{"event_id":"evt_paddle_old","event_type":"subscription.updated","occurred_at":"-271821-04-20T00:00:00Z","data":{"id":"sub_1"}}`;
  const prow = await assertStored(t, "paddle", await ship(bed, { provider: "paddle", body: paddle }), paddle);
  assert.equal(prow.occurred_at, null);
  warned("evt_paddle_old", /occurred_at/);

  const shopify = '{"id":1,"updated_at":"2025-01-01T00:00:00Z"}';
  const reply = await ship(bed, {
    provider: "shopify",
    body: shopify,
    id: "shop_evt_old",
    type: "orders/updated",
    unsigned: { "x-shopify-triggered-at": "-100000-01-01T00:00:00Z" },
  });
  const srow = await assertStored(t, "shopify", reply, shopify);
  assert.equal(srow.occurred_at, null);
  warned("shop_evt_old", /occurred_at/);
});
