import { BATCH_ENDED, markedSql } from "./arm.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import { pendingOrFailedByKey } from "./pick.js";

// The attempt was counted when it was picked (pick.ts): recording its failure only closes it. The error goes into
// the attempt history (attempt_errors, migration 012) when the record closes the attempt: its stamp was still on
// the row (the pick's). A failure recorded after the batch's transaction ended (a handler timeout) finds the
// event's arm committed when a handler committed that transaction itself without the status check seeing it
// (`commit; begin` in one string, arm.ts): its writes may be there, so the event is dead, never retried, and its
// last_error says why ($8), unless the caller asked for it dead with its own reason. The back-off runs from the
// statement's clock, not the batch's start, so a retry lands above the counts' floor (due-floor.ts). The status is
// tested with pendingOrFailedByKey, so the row is probed by key.
const failSql = statement(
  "fail",
  (s) => `with before as (
  select attempt_started_at is not null as closes, ${markedSql(s, "e")} as armed
  from ${s}.events e where source = $1::text and dedupe_key = $2::text
), failed as (
  update ${s}.events
  set last_error = case when (select armed from before) and not $6::boolean then $8::text else $3::text end,
      status = case when $6::boolean or attempts >= $4::int or (select armed from before) then 'dead'
        else 'failed' end,
      next_attempt_at = clock_timestamp() + $5::int * interval '1 millisecond',
      attempt_started_at = null
  where source = $1::text and dedupe_key = $2::text
    and ${pendingOrFailedByKey()} and attempts = $7::int
  returning source, dedupe_key, attempts, status
), history as (
  insert into ${s}.attempt_errors (source, dedupe_key, attempt, error)
  select failed.source, failed.dedupe_key, failed.attempts, $3::text from failed, before where before.closes
  on conflict do nothing
)
select status from failed`,
);

/** Where a failed attempt left its event. */
export type FailedStatus = "failed" | "dead";

/**
 * Records the failure of a counted attempt (`attempts`, its number): the error is kept, and the event is due again
 * after `retryInMs`, or dead once `maxAttempts` attempts are spent (or at once with `dead`, when retrying could
 * apply it twice). Only a pending or failed row still at that attempt is touched: a failure recorded late, outside
 * the attempt's transaction (a handler timeout, a failed commit), never overwrites a settle, a death or a newer
 * attempt; one that finds the attempt's arm committed (arm.ts) makes the event dead.
 *
 * @returns the new status, or `undefined` when the row was missing or had moved on.
 * @example
 * const status = await failEvent(tx, ledger, { source: "stripe", dedupeKey: "evt_1", error: "boom", maxAttempts: 10, retryInMs: 2000, attempts: 1 });
 */
export async function failEvent(
  db: Queryable,
  ledger: LedgerContext,
  input: {
    source: string;
    dedupeKey: string;
    error: string;
    maxAttempts: number;
    retryInMs: number;
    attempts: number;
    dead?: boolean;
  },
): Promise<FailedStatus | undefined> {
  const result = await db.query<{ status: FailedStatus }>({
    ...failSql(ledger),
    values: [
      input.source,
      input.dedupeKey,
      input.error,
      input.maxAttempts,
      Math.round(input.retryInMs),
      input.dead ?? false,
      input.attempts,
      BATCH_ENDED,
    ],
  });
  return result.rows[0]?.status;
}
