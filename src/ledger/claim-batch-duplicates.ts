import type { ClaimResult } from "./claim.js";
import type { BatchRow } from "./claim-batch-insert.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";

/**
 * A duplicate as the claim answers it.
 *
 * @example
 * const duplicate: DuplicateResult = { status: "duplicate", id: "evt_1", bodyMismatch: false };
 */
export type DuplicateResult = Extract<ClaimResult, { status: "duplicate" }>;

// The single claim's duplicate lookup (claim.ts duplicateSql) for many deliveries at once: each finds the row that
// holds its event (by key, or by body hash where the key is unsigned) with a plain read, and the deliveries are
// counted per stored key in one upsert. The upsert locks `duplicates` rows in (source, dedupe_key) order, so two
// batches counting the same keys cannot deadlock on them.
const duplicateBatchSql = statement(
  "duplicate-batch",
  (s) => `with asked as (
  select * from unnest($1::text[], $2::text[], $3::bytea[], $4::boolean[])
    with ordinality as a(source, dedupe_key, body_sha256, on_body, ord)
), existing as (
  select a.ord, a.source, e.dedupe_key, e.mismatch from asked a cross join lateral (
    (select dedupe_key, body_sha256 <> a.body_sha256 as mismatch from ${s}.events
      where source = a.source and dedupe_key = a.dedupe_key)
    union all
    (select dedupe_key, false from ${s}.events
      where a.on_body and source = a.source and body_sha256 = a.body_sha256 and dedupe_on_body)
    limit 1
  ) e
), counted as (
  insert into ${s}.duplicates as d (source, dedupe_key, count, body_mismatches)
  select source, dedupe_key, count(*), count(*) filter (where mismatch) from existing
  group by source, dedupe_key
  order by source, dedupe_key
  on conflict (source, dedupe_key) do update
    set count = d.count + excluded.count, body_mismatches = d.body_mismatches + excluded.body_mismatches,
      last_seen_at = now()
)
select ord::int, dedupe_key, mismatch from existing`,
);

/**
 * After a batched claim: finds, for each delivery that inserted nothing, the row that holds its event and counts
 * the delivery in `duplicates` — one statement for the whole batch, counts added per stored key (two deliveries of
 * one event in a batch add 2). The answer is positional: `undefined` where no live row holds the event (a pruned
 * event's tombstone, or a row pruned meanwhile), which the single claim then answers.
 *
 * @example
 * const found = await inClaimSession(pool, (session) => countDuplicateBatch(session, ledger, conflicted));
 */
export async function countDuplicateBatch(
  db: Queryable,
  ledger: LedgerContext,
  rows: readonly BatchRow[],
): Promise<(DuplicateResult | undefined)[]> {
  const { rows: found } = await db.query<{ ord: number; dedupe_key: string; mismatch: boolean }>({
    ...duplicateBatchSql(ledger),
    values: [
      rows.map((r) => r.input.source),
      rows.map((r) => r.input.event.dedupeKey),
      rows.map((r) => r.sha256),
      rows.map((r) => r.input.event.dedupeOnBodyHash),
    ],
  });
  const answers = new Array<DuplicateResult | undefined>(rows.length);
  for (const r of found) {
    answers[r.ord - 1] = { status: "duplicate", id: r.dedupe_key, bodyMismatch: r.mismatch };
  }
  return answers;
}
