// A seeded fuzz of docs/architecture.md §4's "values the ledger cannot hold as they are": 500 validly signed
// deliveries mixing lone surrogates, NUL, deep nesting, over-long ids and impossible times across four providers.
// None may answer 5xx; every accepted one has a row whose body is the bytes sent.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Pool } from "hookledger";
import { seededRandom } from "hookledger/testing";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { NOW_S } from "../helpers/http.js";
import { type Shipment, ship, type StorableBed, storableBed, storedRow } from "../helpers/storable.js";

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

const SEED = Number(process.env.STORABLE_FUZZ_SEED ?? 20_251_108);
const COUNT = 500;

function fuzzCase(r: () => number, n: number): Shipment {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;
  const hex = (len: number) => Array.from({ length: len }, () => Math.floor(r() * 16).toString(16)).join("");
  // JSON string bodies (the inside of quotes), raw as they go on the wire.
  const hazard = (): string =>
    pick([
      "\\u0000",
      `\\ud${pick(["8", "9", "a", "b", "c", "d", "e", "f"])}${hex(2)}`,
      "\\ud83d\\ude00",
      "é☃",
      "\\\\u0000",
      "\\\\ud800",
      hex(3),
      "",
    ]);
  const text = () => Array.from({ length: 1 + Math.floor(r() * 4) }, hazard).join("");
  const long = () =>
    r() < 0.5 ? hex(1400 + Math.floor(r() * 5000)) : "x".repeat(3000 + Math.floor(r() * 5000));
  const id = r() < 0.2 ? long() : `evt_${n}_${text()}`;
  const type = r() < 0.7 ? "invoice.paid" : `invoice.${text()}`;
  const depth = pick([1, 5, 100, 511, 512, 513, 1000, 5000, 12_000]);
  const nested =
    r() < 0.5 ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"k":'.repeat(depth)}0${"}".repeat(depth)}`;
  const fields = [
    `"${text()}":"${text()}"`,
    `"n${n}":${pick(["1e20", "-1e308", "0.1", "123456789012345678901"])}`,
  ];
  if (r() < 0.3) fields.push(`"deep":${nested}`);
  const iso = pick([
    "2025-01-01T00:00:00Z",
    "-271821-04-20T00:00:00Z",
    "+275760-09-13T00:00:00Z",
    "-004713-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "not a date",
  ]);
  const inner = fields.join(",");
  switch (pick(["stripe", "shopify", "paddle", "github"] as const)) {
    case "stripe": {
      const created = pick([String(NOW_S), "1e20", "-1e20", "8640000000000", "1.5", "-62167219200"]);
      const body = `{"id":"${id}","object":"event","type":"${type}","created":${created},"data":{"object":{"id":"sub_${text()}","object":"subscription",${inner}}}}`;
      return { provider: "stripe", body };
    }
    case "paddle": {
      const body = `{"event_id":"${id}","event_type":"${type}","occurred_at":"${iso}","data":{"id":"sub_${text()}",${inner}}}`;
      return { provider: "paddle", body };
    }
    case "shopify": {
      const body = `{"id":${n},"updated_at":"${iso}",${inner}}`;
      // Header ids cannot carry escapes: ASCII, sometimes over-long.
      const header = r() < 0.2 ? long() : `shop_${n}_${hex(8)}`;
      const unsigned = { "x-shopify-triggered-at": pick([iso, "garbage", "-100000-01-01T00:00:00Z"]) };
      return { provider: "shopify", body, id: header, type: "orders/updated", unsigned };
    }
    case "github": {
      const header = r() < 0.2 ? long() : `gh-${n}-${hex(8)}`;
      return { provider: "github", body: `{"action":"${text()}",${inner}}`, id: header, type: "issues" };
    }
  }
}

test(`${COUNT} seeded signed deliveries mixing the hazards: never a 5xx, every accepted body stored byte-exact`, async () => {
  const r = seededRandom(SEED);
  const cases = Array.from({ length: COUNT }, (_, n) => fuzzCase(r, n));
  const tally = new Map<number, number>();
  const lanes = 4;
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let n = lane; n < cases.length; n += lanes) {
        const shipment = cases[n] as Shipment;
        const reply = await ship(bed, shipment);
        tally.set(reply.status, (tally.get(reply.status) ?? 0) + 1);
        const context = `seed ${SEED}, case ${n} (${shipment.provider}): ${reply.status} ${reply.text.slice(0, 200)}`;
        assert.ok(reply.status < 500, context);
        if (reply.status !== 200) {
          assert.ok([400].includes(reply.status), context);
          continue;
        }
        const answer = JSON.parse(reply.text) as { status: string; id: string };
        if (answer.status !== "accepted") continue;
        const row = await storedRow(t, shipment.provider, answer.id);
        assert.ok(row, `no row: ${context}`);
        assert.ok(row.body.equals(Buffer.from(shipment.body, "utf8")), `body differs: ${context}`);
      }
    }),
  );
  // The mix must actually exercise both answers, or the seed tests nothing.
  assert.ok((tally.get(200) ?? 0) > COUNT / 2, JSON.stringify([...tally]));
  assert.ok((tally.get(400) ?? 0) > 10, JSON.stringify([...tally]));
});
