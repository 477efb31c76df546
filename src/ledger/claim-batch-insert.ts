import { createHash } from "node:crypto";
import { type ClaimInput, insertValues } from "./claim.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import { notTombstonedSql, recheckTombstoneSql } from "./tombstone.js";

/**
 * One delivery of a batched claim: the claim's input (already storable), its body's sha256, its insert values.
 *
 * @example
 * const row: BatchRow = batchRow(input);
 */
export interface BatchRow {
  readonly input: Omit<ClaimInput, "notify">;
  readonly sha256: Uint8Array;
  readonly values: readonly unknown[];
}

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
  return { input, sha256, values: insertValues(input, sha256) };
}

const COLUMNS = `source, dedupe_key, event_type, body, body_sha256, dedupe_on_body, payload, headers, secret_index,
    entity_type, entity_id, entity_version, occurred_at, arrived_via`;

const KEY_COLUMNS = `source, dedupe_key, event_type, body_sha256, dedupe_on_body, secret_index, entity_type, entity_id,
    entity_version, occurred_at, arrived_via`;

// The single claim's insert (claim.ts claimCtes) over arrays, one element per row: the same columns, the same
// tombstone check per row, the same recheck in `returning`, and each inserted row's body next to it. `order by
// r.ord` keeps the caller's (sorted) order through whatever join the planner picks for the tombstone probes, so
// rows are inserted, and their keys locked, in that order (docs/architecture.md, "Concurrent claims are committed in
// batches").
const batchCtes = (s: string) => `r as (
  select * from unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::bytea[], $6::boolean[], $7::jsonb[],
    $8::jsonb[], $9::smallint[], $10::text[], $11::text[], $12::numeric[], $13::timestamptz[], $14::text[])
    with ordinality as r(${COLUMNS}, ord)
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
  select r.source, r.dedupe_key, i.received_at, r.body, r.payload, r.headers
  from inserted i join r on r.source = i.source and r.dedupe_key = i.dedupe_key
)`;

// One NOTIFY for the whole batch, and only when it inserted something: `woken` has one row exactly when
// `inserted` has any, so the cross join returns the inserted rows unchanged.
const claimBatchSql = statement(
  "claim-batch",
  (s) => `with ${batchCtes(s)},
woken as (select pg_notify($15::text, '') from inserted limit 1)
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
  const columns: unknown[][] = Array.from({ length: 14 }, () => new Array(sorted.length));
  sorted.forEach((row, i) => {
    row.values.forEach((value, c) => {
      (columns[c] as unknown[])[i] = value;
    });
  });
  const { rows: inserted } = await db.query<{ source: string; dedupe_key: string }>({
    ...(channel === undefined ? claimBatchQuietSql : claimBatchSql)(ledger),
    values: channel === undefined ? columns : [...columns, channel],
  });
  return new Set(inserted.map((r) => `${r.source}\0${r.dedupe_key}`));
}
