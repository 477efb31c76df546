// docs/architecture.md, "The payload is read from the body": the batched claim has Postgres read a JSON delivery's
// payload from its body's bytes, and keeps the serialised payload wherever jsonb would refuse those bytes, so no
// batch is refused for them.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import {
  assertStored,
  type Shipment,
  type StorableBed,
  ship,
  storableBed,
  stripeText,
} from "../helpers/storable.js";

let t: TestLedger;
let bed: StorableBed;

before(async () => {
  t = await freshLedger();
  bed = await storableBed(t, t.newPool("ingest"));
});

after(async () => {
  await bed?.close();
  await t?.drop();
});

// Numbers JavaScript cannot render as written: a serialised payload would hold 1.5 and 12345678901234567000.
const NUMBERS = '"amount":1.50,"big":12345678901234567890123';

async function payloadText(source: string, id: string): Promise<string> {
  const { rows } = await t.pool.query<{ payload: string }>(
    `select payload::text from ${t.ledger.s}.event_records where source = $1::text and dedupe_key = $2::text`,
    [source, id],
  );
  assert.ok(rows[0], `no row for ${source}/${id}`);
  return rows[0].payload;
}

// The warnings of batches refused for a row's data that held one of `ids` (claim-batch.ts logs the batch's ids).
const refusedBatches = (...ids: string[]) =>
  bed.logged.filter(
    (l) => /claim batch .* refused/.test(l.msg) && (l.eventIds as string[]).some((id) => ids.includes(id)),
  );

test("receiver stores each provider's JSON payload as its body wrote it: numbers kept exactly", async () => {
  const shipments: (Shipment & { source: string })[] = [
    { source: "stripe", provider: "stripe", body: stripeText({ id: '"evt_numbers"', inner: NUMBERS }) },
    {
      source: "paddle",
      provider: "paddle",
      body: `{"event_id":"evt_paddle_numbers","event_type":"subscription.updated","occurred_at":"2025-01-01T00:00:00Z","data":{"id":"sub_1",${NUMBERS}}}`,
    },
    {
      source: "shopify",
      provider: "shopify",
      body: `{"id":7,"updated_at":"2025-01-01T00:00:00Z",${NUMBERS}}`,
      id: "shop_numbers",
      type: "orders/updated",
    },
    {
      source: "github",
      provider: "github",
      body: `{"action":"opened",${NUMBERS}}`,
      id: "gh-numbers",
      type: "issues",
    },
  ];
  for (const shipment of shipments) {
    const row = await assertStored(t, shipment.source, await ship(bed, shipment), shipment.body);
    const text = await payloadText(shipment.source, row.dedupe_key);
    assert.match(text, /"amount": 1\.50\b/, `${shipment.source}: ${text}`);
    assert.match(text, /"big": 12345678901234567890123\b/, `${shipment.source}: ${text}`);
  }
  assert.deepEqual(refusedBatches("evt_numbers", "evt_paddle_numbers", "shop_numbers", "gh-numbers"), []);
});

test("receiver keeps the serialised payload for escapes jsonb refuses, in either case: U+FFFD, no batch refused", async () => {
  const escapes = {
    evt_nul: "x\\u0000y",
    evt_lower: "x\\udbffy",
    evt_upper: "x\\uD800y",
    evt_low: "x\\uDC00y",
  };
  for (const [id, escaped] of Object.entries(escapes)) {
    const body = stripeText({ id: `"${id}"`, inner: `"note":"${escaped}"` });
    const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
    const object = (row.payload as { data: { object: Record<string, string> } }).data.object;
    assert.equal(object.note, "x\ufffdy", id);
  }
  assert.deepEqual(refusedBatches(...Object.keys(escapes)), []);
});

test("receiver stores a body that starts with a byte order mark: bytes exact, payload parsed, no batch refused", async () => {
  const body = `\ufeff${stripeText({ id: '"evt_bom"', inner: NUMBERS })}`;
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  assert.equal((row.payload as { id: string }).id, "evt_bom");
  assert.match(await payloadText("stripe", "evt_bom"), /"amount": 1\.5\b/, "the serialised payload");
  assert.deepEqual(refusedBatches("evt_bom"), []);
});

test("receiver accepts a number numeric cannot hold (1e200000): its row is claimed alone, the number stored as null", async () => {
  const body = stripeText({ id: '"evt_huge_number"', inner: '"huge":1e200000' });
  const row = await assertStored(t, "stripe", await ship(bed, { provider: "stripe", body }), body);
  const object = (row.payload as { data: { object: Record<string, unknown> } }).data.object;
  assert.equal(object.huge, null);
  assert.equal(
    refusedBatches("evt_huge_number").length,
    1,
    "its batch was refused once, its row claimed alone",
  );
});
