import type { ClaimInput, ClaimResult } from "./claim.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";

/**
 * Where {@link notTombstonedSql} reads the claimed row's values: parameters, or the columns of a batch's rows.
 *
 * @example
 * const row: ClaimedRowSql = { source: "r.source", key: "r.dedupe_key", sha256: "r.body_sha256", onBody: "r.dedupe_on_body" };
 */
export interface ClaimedRowSql {
  readonly source: string;
  readonly key: string;
  readonly sha256: string;
  readonly onBody: string;
}

const singleClaim: ClaimedRowSql = {
  source: "$1::text",
  key: "$2::text",
  sha256: "$5::bytea",
  onBody: "$6::boolean",
};

/**
 * The claim's tombstone condition (docs/architecture.md §8, prune): appended to the claim's `insert … select`, it inserts
 * nothing when the dedupe key (or, for providers that dedupe on the body, the body hash) belongs to a pruned
 * event. Two primary-key probes on a small table, per row; the values are by default the single claim's `$1`
 * source, `$2` key, `$5` body hash and `$6` dedupe-on-body flag, or `row`'s expressions (a batch's columns).
 *
 * @example
 * const sql = `insert into … select $1::text, … ${notTombstonedSql(s)} on conflict do nothing returning dedupe_key`;
 * const batch = notTombstonedSql(s, { source: "r.source", key: "r.dedupe_key", sha256: "r.body_sha256", onBody: "r.dedupe_on_body" });
 */
export const notTombstonedSql = (
  s: string,
  row: ClaimedRowSql = singleClaim,
) => `where not exists (select 1 from ${s}.tombstones
    where source = ${row.source} and dedupe_key = ${row.key})
  and not (${row.onBody} and exists (select 1 from ${s}.tombstones
    where source = ${row.source} and body_sha256 = ${row.sha256} and dedupe_on_body))`;

/**
 * The claim's second tombstone check, in its `returning` clause: on the row just inserted, once its index entries
 * exist, `claim_recheck` (migration 007) looks for a tombstone with a fresh snapshot and raises `HLP01` when a
 * prune tombstoned the key (or body hash) after the claim's snapshot and deleted its row before the claim's index
 * probe. The first check alone cannot see that tombstone; this one must, since prune commits it before the delete.
 *
 * @example
 * const sql = `insert into … on conflict do nothing returning dedupe_key, ${recheckTombstoneSql(s)}`;
 */
export const recheckTombstoneSql = (s: string) =>
  `${s}.claim_recheck(source, dedupe_key, body_sha256, dedupe_on_body) as not_pruned`;

/** The SQLSTATE `claim_recheck` raises. */
const PRUNED_MEANWHILE = "HLP01";

/**
 * Runs a claim, and once more if a prune tombstoned its key while it ran (`HLP01`): the insert was aborted, and
 * the second run sees the tombstone and answers duplicate. A claim on a caller's open transaction cannot run again
 * (the error aborted that transaction), so the second run's error reaches the caller.
 *
 * @example
 * const result = await againIfPrunedMeanwhile(() => claimOn(pool, ledger, input));
 */
export async function againIfPrunedMeanwhile<T>(claim: () => Promise<T>): Promise<T> {
  try {
    return await claim();
  } catch (error) {
    if ((error as { code?: unknown }).code !== PRUNED_MEANWHILE) throw error;
    return claim();
  }
}

const tombstoneSql = statement(
  "tombstone",
  (s) => `(select dedupe_key, body_sha256 <> $3::bytea as mismatch from ${s}.tombstones
  where source = $1::text and dedupe_key = $2::text)
union all
(select dedupe_key, false from ${s}.tombstones
  where $4::boolean and source = $1::text and body_sha256 = $3::bytea and dedupe_on_body)
limit 1`,
);

/**
 * After a claim inserted nothing and no live row holds the event: the tombstone of a pruned event with this key
 * (or body hash), answered as a duplicate. Nothing is counted in `duplicates` (its row went with the event; the
 * HTTP edge's delivery statistics still count the duplicate). `undefined` when there is no tombstone either.
 *
 * @example
 * const pruned = await tombstoneDuplicate(pool, ledger, input, sha256);
 */
export async function tombstoneDuplicate(
  db: Queryable,
  ledger: LedgerContext,
  input: Pick<ClaimInput, "source" | "event">,
  sha256: Uint8Array,
): Promise<Extract<ClaimResult, { status: "duplicate" }> | undefined> {
  const found = await db.query<{ dedupe_key: string; mismatch: boolean }>({
    ...tombstoneSql(ledger),
    values: [input.source, input.event.dedupeKey, sha256, input.event.dedupeOnBodyHash],
  });
  const row = found.rows[0];
  return row && { status: "duplicate", id: row.dedupe_key, bodyMismatch: row.mismatch };
}

/** What the ledger still knows of a pruned event: its key, when it was received and when it was pruned. */
export interface Tombstone {
  readonly source: string;
  readonly dedupeKey: string;
  readonly receivedAt: Date;
  readonly prunedAt: Date;
}

const getTombstoneSql = statement(
  "tombstone-get",
  (s) =>
    `select received_at, pruned_at from ${s}.tombstones where source = $1::text and dedupe_key = $2::text`,
);

/**
 * The tombstone of a pruned event, or `undefined` when the key has none (never claimed, still live, or the
 * tombstone itself expired).
 *
 * @example
 * const pruned = await getTombstone(pool, ledger, "stripe", "evt_1");
 * if (pruned) console.log(`pruned on ${pruned.prunedAt.toISOString()}`);
 */
export async function getTombstone(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  dedupeKey: string,
): Promise<Tombstone | undefined> {
  const { rows } = await db.query<{ received_at: Date; pruned_at: Date }>({
    ...getTombstoneSql(ledger),
    values: [source, dedupeKey],
  });
  const row = rows[0];
  return row && { source, dedupeKey, receivedAt: row.received_at, prunedAt: row.pruned_at };
}
