import { type LedgerContext, type Queryable, statement } from "./context.js";

/** How a settled event ended (docs/architecture.md §3). */
export type Outcome = "applied" | "stale" | "unhandled" | "ignored";

// One statement ends a batch's events in its transaction: each with an outcome is settled; each without one is
// given back (it did not run: the batch's time budget ran out, the worker is stopping, or its entity was busy), due
// again at once with its attempt uncounted (stamped with the statement's clock, not the batch's start, so that it
// lands above the counts' floor: due-floor.ts). Only inside the batch's transaction (`$4`, its id): a handler that
// ended it and began another (`commit; begin` in one string) leaves the connection in a transaction where no status
// check sees the switch, and nothing must settle there. The row locks are the batch's, so no other fence is needed.
// The batch's row of marks ($5, arm.ts) goes with it: committed, it would make its armed events dead.
const settleSql = statement(
  "settle",
  (s) => `with done as (
  update ${s}.events e
  set status = case when u.outcome is null then e.status else 'settled' end,
      outcome = u.outcome,
      settled_at = case when u.outcome is null then null else now() end,
      last_error = case when u.outcome is null then e.last_error end,
      attempts = case when u.outcome is null then e.attempts - 1 else e.attempts end,
      next_attempt_at = case when u.outcome is null then clock_timestamp() else e.next_attempt_at end,
      attempt_started_at = null
  from unnest($1::text[], $2::text[], $3::text[]) as u (source, dedupe_key, outcome)
  where e.source = u.source and e.dedupe_key = u.dedupe_key
    and pg_current_xact_id_if_assigned()::text = $4::text
  returning 1
), unmarked as (
  delete from ${s}.batch_marks
  where batch = $5::bigint and xid = pg_current_xact_id_if_assigned()::text::bigint
)
select coalesce(pg_current_xact_id_if_assigned()::text = $4::text, false) as same, (select count(*)::int from done) as n`,
);

/** One event of a batch at its end: settled with `outcome`, or given back uncounted with `null`. */
export interface BatchEnd {
  readonly source: string;
  readonly dedupe_key: string;
  readonly outcome: Outcome | null;
}

/**
 * Settles a batch's events, and gives back those that did not run, inside the transaction that holds their row
 * locks and carries the handlers' writes. Their attempts were counted when they were picked, so a settled event's
 * count stays as it is.
 *
 * `batch`: the batch's id, whose row of marks (arm.ts) is deleted with the settle.
 *
 * @returns false when the connection is no longer in transaction `xid` (a handler ended it and began another):
 * nothing was written.
 * @example
 * await settleAttempts(tx, ledger, [{ source: "stripe", dedupe_key: "evt_123", outcome: "applied" }], xid, batch);
 */
export async function settleAttempts(
  tx: Queryable,
  ledger: LedgerContext,
  ends: readonly BatchEnd[],
  xid: string,
  batch: string,
): Promise<boolean> {
  const result = await tx.query<{ same: boolean; n: number }>({
    ...settleSql(ledger),
    values: [
      ends.map((e) => e.source),
      ends.map((e) => e.dedupe_key),
      ends.map((e) => e.outcome),
      xid,
      batch,
    ],
  });
  const row = result.rows[0];
  return row?.same === true && row.n === ends.length;
}
