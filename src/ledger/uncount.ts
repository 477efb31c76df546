import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { CountedKey } from "./pick.js";

// Only an event still at the counted attempt, stamped and not settled, failed or dead since: a give-back that comes
// after the batch's transaction ended (a cut-off handler, a handler that ended it itself, a failed commit) never
// undoes what that transaction committed, nor a newer attempt of another worker.
const uncountSql = statement(
  "uncount",
  (s) => `update ${s}.events e
set attempts = e.attempts - 1, attempt_started_at = null, next_attempt_at = now()
from unnest($1::text[], $2::text[], $3::int[]) as k (source, dedupe_key, attempts)
where e.source = k.source and e.dedupe_key = k.dedupe_key and e.attempts = k.attempts
  and e.attempt_started_at is not null and e.status in ('pending', 'failed')
returning e.source, e.dedupe_key`,
);

/**
 * Gives counted attempts back, outside their transaction: each event still at that attempt is due again at once,
 * not counted (its attempt ran nothing that lasted: the worker stopped first, its batch rolled back).
 *
 * @returns the events given back; the others had moved on.
 * @example
 * await uncountAttempts(pool, ledger, [{ source: "stripe", dedupe_key: "evt_1", attempts: 1 }]);
 */
export async function uncountAttempts(
  db: Queryable,
  ledger: LedgerContext,
  keys: readonly Pick<CountedKey, "source" | "dedupe_key" | "attempts">[],
): Promise<{ source: string; dedupe_key: string }[]> {
  if (keys.length === 0) return [];
  const result = await db.query<{ source: string; dedupe_key: string }>({
    ...uncountSql(ledger),
    values: [keys.map((k) => k.source), keys.map((k) => k.dedupe_key), keys.map((k) => k.attempts)],
  });
  return result.rows;
}
