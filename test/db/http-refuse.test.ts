// DESIGN.md §4 through the node:http adapter: every refusal (401, 400, 404, 405, 413, 415), each leaving no row.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Pool } from "../../src/db/pool.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import {
  ledgerCounts,
  NOW_S,
  open,
  type Reply,
  STRIPE_CAP,
  send,
  serve,
  stripeBody,
  stripeHeaders,
  stripeSignature,
} from "../helpers/http.js";

let t: TestLedger;
let ingest: Pool;
let server: { url: string; close(): Promise<void> };

before(async () => {
  t = await freshLedger();
  ingest = t.newPool("ingest");
  server = await serve(testReceiverFor(ingest));
});

after(async () => {
  await server?.close();
  await t?.drop();
});

import { testReceiver } from "../helpers/http.js";

function testReceiverFor(db: Pool) {
  return testReceiver(db, t.ledger);
}
