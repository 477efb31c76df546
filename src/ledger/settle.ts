import { type LedgerContext, type Queryable, statement } from "./context.js";

/** How a settled event ended (docs/architecture.md §3). */
export type Outcome = "applied" | "stale" | "unhandled" | "ignored";

const settleSql = statement(
  "settle",
  (s) => `update ${s}.events
set status = 'settled', outcome = $3::text, settled_at = now(), last_error = null, attempt_started_at = null
where source = $1::text and dedupe_key = $2::text
  and ($4::text is null or pg_current_xact_id_if_assigned()::text = $4::text)`,
);

/**
 * Settles an event inside the transaction that holds its row lock and carries the handler's writes. Its attempt
 * was counted when it was picked, so the count stays as it is. With `xid` (from `armAttempt`), it settles only
 * inside that transaction and returns false in any other (a handler ended it and began another).
 *
 * @example
 * await settleEvent(tx, ledger, "stripe", "evt_123", "applied");
 */
export async function settleEvent(
  tx: Queryable,
  ledger: LedgerContext,
  source: string,
  dedupeKey: string,
  outcome: Outcome,
  xid?: string,
): Promise<boolean> {
  const result = await tx.query({ ...settleSql(ledger), values: [source, dedupeKey, outcome, xid ?? null] });
  return result.rowCount === 1;
}
