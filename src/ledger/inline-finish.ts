import { type LedgerContext, type Queryable, statement } from "./context.js";

// Both touch the row only while the caller's lease is still on it: a delivery that took the event over after the
// lease ran out holds a new lease, and a late settle or failure of the old run must not end or shorten it.
const ours = `source = $1::text and dedupe_key = $2::text and status = 'inline'
  and extract(epoch from next_attempt_at) = $3::numeric`;

const settleInlineSql = statement(
  "inline-settle",
  (s) => `update ${s}.events
set status = 'settled', outcome = 'applied', attempts = attempts + 1, settled_at = now(), last_error = null
where ${ours}
returning attempts`,
);

// A failure that counts an attempt ($5 > 0) goes into the attempt history (attempt_errors, migration 012).
const failInlineSql = statement(
  "inline-fail",
  (s) => `with failed as (
  update ${s}.events
  set attempts = attempts + $5::int, last_error = $4::text, next_attempt_at = now()
  where ${ours}
  returning source, dedupe_key, attempts
), history as (
  insert into ${s}.attempt_errors (source, dedupe_key, attempt, error)
  select source, dedupe_key, attempts, $4::text from failed where $5::int > 0
  on conflict do nothing
)
select attempts from failed`,
);

/**
 * The row an inline run holds: its key and the lease its claim returned.
 *
 * @example
 * const hold: InlineHold = { source: "stripe", dedupeKey: claim.id, lease: claim.lease };
 */
export interface InlineHold {
  readonly source: string;
  readonly dedupeKey: string;
  readonly lease: string;
}

/**
 * Settles an inline event `applied` after the app's handler finished.
 *
 * @returns the attempt count, or `undefined` when the lease was no longer this run's (taken over, or already ended).
 * @example
 * await settleInline(pool, ledger, { source: "stripe", dedupeKey: "evt_1", lease: claim.lease });
 */
export async function settleInline(
  db: Queryable,
  ledger: LedgerContext,
  hold: InlineHold,
): Promise<number | undefined> {
  const result = await db.query<{ attempts: number }>({
    ...settleInlineSql(ledger),
    values: [hold.source, hold.dedupeKey, hold.lease],
  });
  return result.rows[0]?.attempts;
}

/**
 * Ends an inline run that failed: the row stays `inline`, its lease ends now (so the provider's next delivery takes
 * it over) and the error is kept. `countAttempt: false` releases a claim whose handler never ran (a claim that
 * committed after its 503).
 *
 * @returns the attempt count, or `undefined` when the lease was no longer this run's.
 * @example
 * await failInline(pool, ledger, { source: "stripe", dedupeKey: "evt_1", lease: claim.lease }, "boom");
 */
export async function failInline(
  db: Queryable,
  ledger: LedgerContext,
  hold: InlineHold,
  error: string,
  options: { countAttempt?: boolean } = {},
): Promise<number | undefined> {
  const result = await db.query<{ attempts: number }>({
    ...failInlineSql(ledger),
    values: [hold.source, hold.dedupeKey, hold.lease, error, options.countAttempt === false ? 0 : 1],
  });
  return result.rows[0]?.attempts;
}
