import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type BrowseQuery, browseEvents } from "../../src/ledger/browse.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";

// The dashboard's list answers in well under 200 ms on a million events only through migration 012's indexes
// (docs/benchmarks.md, "The dashboard on a million events"): on a ledger big enough that the planner weighs them,
// each filter's plan must walk its index, newest first, and never read the whole table.
let big: TestLedger;
before(async () => {
  big = await freshLedger();
  // 300,000 events over 30 days, 0.3 % failed or dead, 20 types, 20,000 entities.
  await big.pool.query(
    `insert into ${big.ledger.s}.events (source, dedupe_key, event_type, body_sha256, status, outcome, attempts,
       settled_at, entity_type, entity_id, entity_version, received_at, next_attempt_at)
     select case when i % 4 = 0 then 'github' else 'stripe' end, 'evt_' || i, 'type.' || (i % 20), '\\x00', s,
       case when s = 'settled' then 'applied' end, 1, case when s = 'settled' then at end,
       'sub', 'sub_' || (i % 20000), i, at, at
     from generate_series(1, 300000) i,
       lateral (select now() - interval '30 days' + i * interval '8640 milliseconds' as at,
                       case when i % 1000 < 2 then 'failed' when i % 1000 < 3 then 'dead' else 'settled' end as s) x`,
  );
  await big.pool.query(`analyze ${big.ledger.s}.events`);
});
after(() => big.drop());

async function plan(query: BrowseQuery): Promise<string> {
  let text = "";
  let values: unknown[] = [];
  await browseEvents(
    {
      query: async (q: unknown, v?: unknown[]) => {
        text = q as string;
        values = v ?? [];
        return { rows: [], rowCount: 0 };
      },
    },
    big.ledger,
    query,
  );
  const explained = await big.pool.query(`explain ${text}`, values);
  return explained.rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
}

const cases: [string, BrowseQuery, RegExp][] = [
  ["the first page", {}, /Index Scan Backward using events_received/],
  [
    "a page further, by cursor",
    { cursor: { receivedMicros: "1764590400123456", seq: "200000" } },
    /events_received/,
  ],
  ["dead and failed", { troubled: true }, /Index Scan Backward using events_troubled/],
  // A type one event in twenty has is found as fast along events_received; either plan is fine.
  ["a common type", { type: "type.7" }, /Index Scan Backward using events_(type|received)/],
  ["a type no event has", { type: "no.such.type" }, /Index Scan Backward using events_type/],
  ["one entity", { entityType: "sub", entityId: "sub_7" }, /events_entity/],
];

for (const [name, query, index] of cases) {
  test(`browseEvents(${name}) on 300,000 events walks its index and never scans the table`, async () => {
    const text = await plan(query);
    assert.match(text, index, text);
    assert.doesNotMatch(text, /Seq Scan on events/, text);
  });
}
