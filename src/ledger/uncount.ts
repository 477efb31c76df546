import { type LedgerContext, type Queryable, statement } from "./context.js";
import { type CountedKey, HANDLER_ENDED_TRANSACTION } from "./pick.js";

// After a batch's transaction ended without its settle: each event still at the counted attempt and stamped (its
// batch rolled back) is given back, due again at once with its attempt uncounted, its status and last_error as
// before the batch armed it (pick-lock.ts). So is one that never ran but whose arm was committed, by a handler that
// committed the batch's transaction itself: it is dead with HANDLER_ENDED_TRANSACTION ($7) and nothing of it ran.
// Anything else is left as the transaction committed it: a settle, a recorded failure, the arm of an event that
// ran (dead: its writes may be committed), or a newer attempt of another worker.
const uncountSql = statement(
  "uncount",
  (s) => `update ${s}.events e
set status = k.previous_status, last_error = k.previous_error, attempts = e.attempts - 1,
    attempt_started_at = null, next_attempt_at = now()
from unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::boolean[])
  as k (source, dedupe_key, attempts, previous_status, previous_error, ran)
where e.source = k.source and e.dedupe_key = k.dedupe_key and e.attempts = k.attempts
  and ((e.attempt_started_at is not null and e.status in ('pending', 'failed'))
    or (not k.ran and e.status = 'dead' and e.attempt_started_at is null and e.last_error = $7::text))
returning e.source, e.dedupe_key`,
);

/** A counted attempt to give back, as its batch locked it; `ran`: its handler was called. */
export interface Uncount extends Pick<CountedKey, "source" | "dedupe_key" | "attempts"> {
  readonly previous_status: string;
  readonly previous_error: string | null;
  readonly ran: boolean;
}

/**
 * Gives counted attempts back after their batch's transaction ended without its settle: see the statement.
 *
 * @returns the events given back; the others had moved on, or were made durable by the transaction.
 * @example
 * await uncountAttempts(pool, ledger, locked.map((e) => ({ ...e, ran: false })));
 */
export async function uncountAttempts(
  db: Queryable,
  ledger: LedgerContext,
  keys: readonly Uncount[],
): Promise<{ source: string; dedupe_key: string }[]> {
  if (keys.length === 0) return [];
  const result = await db.query<{ source: string; dedupe_key: string }>({
    ...uncountSql(ledger),
    values: [
      keys.map((k) => k.source),
      keys.map((k) => k.dedupe_key),
      keys.map((k) => k.attempts),
      keys.map((k) => k.previous_status),
      keys.map((k) => k.previous_error),
      keys.map((k) => k.ran),
      HANDLER_ENDED_TRANSACTION,
    ],
  });
  return result.rows;
}
