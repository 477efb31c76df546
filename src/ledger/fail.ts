import { type LedgerContext, type Queryable, statement } from "./context.js";

const failSql = statement(
  "fail",
  (s) => `update ${s}.events
set attempts = attempts + 1,
    last_error = $3::text,
    status = case when attempts + 1 >= $4::int then 'dead' else 'failed' end,
    next_attempt_at = now() + $5::int * interval '1 millisecond'
where source = $1::text and dedupe_key = $2::text
  and status in ('pending', 'failed') and ($6::int is null or attempts = $6::int)
returning status`,
);

/** Where a failed attempt left its event. */
export type FailedStatus = "failed" | "dead";

/**
 * Records a failed attempt: the attempt count rises, the error is kept, and the event is due again after
 * `retryInMs`, or dead once `maxAttempts` attempts have failed. Only a pending or failed row is touched, and with
 * `attempts` (the count the failed attempt started from) only if no other attempt was recorded since: a failure
 * recorded late, outside the attempt's transaction (a handler timeout), never overwrites a newer outcome.
 *
 * @returns the new status, or `undefined` when the row was missing or had moved on.
 * @example
 * const status = await failEvent(tx, ledger, { source: "stripe", dedupeKey: "evt_1", error: "boom", maxAttempts: 10, retryInMs: 2000 });
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
    attempts?: number;
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
      input.attempts ?? null,
    ],
  });
  return result.rows[0]?.status;
}
