import { type LedgerContext, type Queryable, statement } from "./context.js";

/** How a settled event ended (docs/architecture.md §3). */
export type Outcome = "applied" | "stale" | "unhandled" | "ignored";

const settleSql = statement(
  "settle",
  (s) => `update ${s}.events
set status = 'settled', outcome = $3::text, settled_at = now(), last_error = null, attempt_started_at = null
where source = $1::text and dedupe_key = $2::text`,
);

/**
 * Settles an event inside the transaction that holds its row lock and carries the handler's writes. Its attempt
 * was counted when it was picked, so the count stays as it is.
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
): Promise<void> {
  await tx.query({ ...settleSql(ledger), values: [source, dedupeKey, outcome] });
}
