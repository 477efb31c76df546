import { createHash } from "node:crypto";
import { type ClaimInput, insertValues } from "./claim.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import { jsonbReadsBody } from "./storable.js";
import { notTombstonedSql, recheckTombstoneSql } from "./tombstone.js";

/**
 * One delivery of a batched claim: the claim's input (already storable), its body's sha256, its insert values, and
 * whether Postgres reads its payload from the body (`values` then holds no payload).
 *
 * @example
 * const row: BatchRow = batchRow(input);
 */
export interface BatchRow {
  readonly input: Omit<ClaimInput, "notify">;
  readonly sha256: Uint8Array;
  readonly values: readonly unknown[];
  readonly payloadFromBody: boolean;
}

// The payload's position in insertValues (claim.ts).
const PAYLOAD = 6;

/**
 * Prepares one delivery for {@link insertClaimBatch}; throws only for that delivery (a payload JSON cannot hold).
 * `bodySha256` (hex) is the body's hash when the caller has it; otherwise it is taken here.
 *
 * @example
 * const row = batchRow({ source: "stripe", event, body, headers: {}, secretIndex: 0, arrivedVia: "delivery" });
 */
export function batchRow(input: Omit<ClaimInput, "notify">, bodySha256?: string): BatchRow {
  const sha256 =
    bodySha256 === undefined
      ? createHash("sha256").update(input.body).digest()
      : Buffer.from(bodySha256, "hex");
  const payloadFromBody = input.event.payloadIsBody === true && jsonbReadsBody(input.body);
  const values = insertValues(input, sha256, payloadFromBody);
  // A payload with no JSON form (undefined) would break the batch's JSON array for every row; it fails here alone.
  if (values[PAYLOAD] === undefined) throw new Error("the payload has no JSON form");
  return { input, sha256, values, payloadFromBody };
}

const KEY_COLUMNS = `source, dedupe_key, event_type, body_sha256, dedupe_on_body, secret_index, entity_type, entity_id,
    entity_version, occurred_at, arrived_via`;

// The single claim's insert (claim.ts claimCtes) over arrays, one element per row: the same columns, the same
// tombstone check per row, the same recheck in `returning`, and each inserted row's body next to it. `order by
// r.ord` keeps the caller's (sorted) order through whatever join the planner picks for the tombstone probes, so
// rows are inserted, and their keys locked, in that order (docs/architecture.md, "Concurrent claims are committed in
// batches").
// The two large columns do not travel as array literals: the bodies go as one binary bytea ($16, sliced by $4/$5),
// the payloads as one JSON array ($8), zipped to the rows by ROWS FROM. A bytea[] literal sends each body as hex
// (twice its size) and a jsonb[] literal escapes every quote of every payload: 22 µs of CPU per row in the process
// and 17 µs in Postgres, 2 KB Stripe bodies (docs/architecture.md, "Concurrent claims are committed in batches").
// A row whose payload is its body ($17) has a null in that array and its payload read from its body's bytes, so
// the process neither serialises nor sends it a second time (docs/architecture.md, "The payload is read from the
// body").
const batchCtes = (s: string) => `r as (
  select * from rows from (
    unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::bytea[], $7::boolean[], $9::jsonb[],
      $10::smallint[], $11::text[], $12::text[], $13::numeric[], $14::timestamptz[], $15::text[], $17::boolean[]),
    jsonb_array_elements($8::jsonb)
  ) with ordinality as r(source, dedupe_key, event_type, body_start, body_length, body_sha256, dedupe_on_body, headers,
    secret_index, entity_type, entity_id, entity_version, occurred_at, arrived_via, payload_from_body, payload, ord)
), inserted as (
  insert into ${s}.events (${KEY_COLUMNS})
  select ${KEY_COLUMNS}
  from r
  ${notTombstonedSql(s, { source: "r.source", key: "r.dedupe_key", sha256: "r.body_sha256", onBody: "r.dedupe_on_body" })}
  order by r.ord
  on conflict do nothing
  returning source, dedupe_key, received_at, ${recheckTombstoneSql(s)}
), bodies as (
  insert into ${s}.event_bodies (source, dedupe_key, received_at, body, payload, headers)
  select r.source, r.dedupe_key, i.received_at, b.body,
    case when r.payload_from_body then convert_from(b.body, 'UTF8')::jsonb else r.payload end, r.headers
  from inserted i join r on r.source = i.source and r.dedupe_key = i.dedupe_key
    cross join lateral (select substring($16::bytea from r.body_start + 1 for r.body_length) as body) b
)`;

// One NOTIFY for the whole batch, and only when it inserted something: `woken` has one row exactly when
// `inserted` has any, so the cross join returns the inserted rows unchanged.
const claimBatchSql = statement(
  "claim-batch",
  (s) => `with ${batchCtes(s)},
woken as (select pg_notify($18::text, '') from inserted limit 1)
select source, dedupe_key from inserted, woken`,
);

const claimBatchQuietSql = statement(
  "claim-batch-quiet",
  (s) => `with ${batchCtes(s)} select source, dedupe_key from inserted`,
);

// (source, dedupe key) in UTF-16 code units: the same order in every process.
function compareRows(a: BatchRow, b: BatchRow): number {
  const x = a.input.source;
  const y = b.input.source;
  if (x !== y) return x < y ? -1 : 1;
  const k = a.input.event.dedupeKey;
  const l = b.input.event.dedupeKey;
  return k < l ? -1 : k > l ? 1 : 0;
}

/**
 * Claims a batch of deliveries in one `insert … select … from unnest(…) on conflict do nothing returning`
 * statement, with one NOTIFY on `channel` in it when it inserted anything (none when `channel` is undefined).
 * Rows are inserted in (source, dedupe key) order (UTF-16 code units), so two batches that share keys take them
 * in the same order and cannot deadlock on them. Keys should be unique in a batch (a repeated key is inserted once
 * and reported once). Resolves with the `source\0dedupe_key` of every row inserted; a row not among them
 * conflicted with an existing or concurrent claim (the statement waited for that one to commit or abort) or with a
 * tombstone. Run it in the claim's session (`inClaimSession`); a data error in any row fails the whole statement.
 *
 * @example
 * const rows = inputs.map(batchRow);
 * const accepted = await inClaimSession(pool, (session) => insertClaimBatch(session, ledger, rows, ledger.channel));
 * const ok = accepted.has(`${row.input.source}\0${row.input.event.dedupeKey}`);
 */
export async function insertClaimBatch(
  db: Queryable,
  ledger: LedgerContext,
  rows: readonly BatchRow[],
  channel: string | undefined,
): Promise<Set<string>> {
  const sorted = [...rows].sort(compareRows);
  const { length } = sorted;
  const column = (c: number) => sorted.map((row) => row.values[c]);
  const bodies = sorted.map((row) => row.input.body);
  const starts = new Array<number>(length);
  let offset = 0;
  bodies.forEach((body, i) => {
    starts[i] = offset;
    offset += body.byteLength;
  });
  const values = [
    column(0),
    column(1),
    column(2),
    starts,
    bodies.map((body) => body.byteLength),
    column(4),
    column(5),
    `[${sorted.map((row) => (row.payloadFromBody ? "null" : row.values[PAYLOAD])).join(",")}]`,
    column(7),
    column(8),
    column(9),
    column(10),
    column(11),
    column(12),
    column(13),
    Buffer.concat(bodies, offset),
    sorted.map((row) => row.payloadFromBody),
  ];
  const { rows: inserted } = await db.query<{ source: string; dedupe_key: string }>({
    ...(channel === undefined ? claimBatchQuietSql : claimBatchSql)(ledger),
    values: channel === undefined ? values : [...values, channel],
  });
  return new Set(inserted.map((r) => `${r.source}\0${r.dedupe_key}`));
}
