import { BATCH_ENDED, markedSql } from "./arm.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import { type CountedKey, pendingOrFailedByKey } from "./pick.js";

// Only an event still at the counted attempt, stamped and not settled, failed or dead since: a give-back that comes
// after the batch's transaction ended (a cut-off handler, a handler that ended it itself, a failed commit) never
// undoes what that transaction committed, nor a newer attempt of another worker. An event whose arm that
// transaction committed (a handler of its batch committed it: arm.ts) is made dead instead, since its writes may be
// there, and its failure goes into the attempt history; the batch's row of marks ($4) is deleted, its events all
// ended here. A given-back event is stamped with the statement's clock, above the counts' floor (due-floor.ts).
// The status is tested with pendingOrFailedByKey, so the rows are probed by key.
const uncountSql = statement(
  "uncount",
  (s) => `with k as (
  select e.source, e.dedupe_key, u.attempts, ${markedSql(s, "e")} as armed
  from unnest($1::text[], $2::text[], $3::int[]) as u (source, dedupe_key, attempts)
  join ${s}.events e on e.source = u.source and e.dedupe_key = u.dedupe_key
), ended as (
  update ${s}.events e
  set attempts = case when k.armed then e.attempts else e.attempts - 1 end,
      status = case when k.armed then 'dead' else e.status end,
      last_error = case when k.armed then $5::text else e.last_error end,
      attempt_started_at = null,
      next_attempt_at = case when k.armed then e.next_attempt_at else clock_timestamp() end
  from k
  where e.source = k.source and e.dedupe_key = k.dedupe_key and e.attempts = k.attempts
    and e.attempt_started_at is not null and ${pendingOrFailedByKey("e")}
  returning e.source, e.dedupe_key, e.attempts, k.armed
), history as (
  insert into ${s}.attempt_errors (source, dedupe_key, attempt, error)
  select source, dedupe_key, attempts, $5::text from ended where armed
  on conflict do nothing
), unmarked as (
  delete from ${s}.batch_marks where batch = $4::bigint
)
select source, dedupe_key, armed from ended`,
);

/** An event {@link uncountAttempts} ended: given back, or dead when its arm was committed. */
export interface Uncounted {
  readonly source: string;
  readonly dedupe_key: string;
  /** Made dead: a handler of its batch committed the transaction after this event's arm. */
  readonly armed: boolean;
}

/**
 * Gives counted attempts back, outside their transaction: each event still at that attempt is due again at once,
 * not counted (its attempt ran nothing that lasted: the worker stopped first, its batch rolled back), unless a
 * handler of its batch committed the transaction after the event's arm (arm.ts): then it is dead, since its writes
 * may be there. `batch`: the id of the batch they ran in, whose row of marks goes with them (omitted when the
 * batch's transaction cannot have committed one).
 *
 * @returns the events ended; the others had moved on.
 * @example
 * await uncountAttempts(pool, ledger, [{ source: "stripe", dedupe_key: "evt_1", attempts: 1 }]);
 */
export async function uncountAttempts(
  db: Queryable,
  ledger: LedgerContext,
  keys: readonly Pick<CountedKey, "source" | "dedupe_key" | "attempts">[],
  batch?: string,
): Promise<Uncounted[]> {
  if (keys.length === 0 && batch === undefined) return [];
  const result = await db.query<Uncounted>({
    ...uncountSql(ledger),
    values: [
      keys.map((k) => k.source),
      keys.map((k) => k.dedupe_key),
      keys.map((k) => k.attempts),
      batch ?? null,
      BATCH_ENDED,
    ],
  });
  return result.rows;
}
