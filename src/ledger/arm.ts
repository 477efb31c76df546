import { pg } from "../deps.js";
import type { LedgerContext, Queryable } from "./context.js";
import { HANDLER_ENDED_TRANSACTION, type PickedEvent } from "./pick.js";

/** The savepoint each event of a batch runs in; a handler's failure rolls back to it and no further. */
export const EVENT_SAVEPOINT = "hookledger_event";

/**
 * Opens the event's savepoint and arms the event, in one round trip: inside the savepoint its row is marked `dead`
 * with {@link HANDLER_ENDED_TRANSACTION}. The settle, or rolling back to the savepoint, replaces the mark, so it is
 * only ever committed by a handler that commits the batch's transaction itself (however it spells it), atomically
 * with its writes: the event is then never run (and applied) again. `release`: the previous event's savepoint is
 * released first, so savepoints do not nest a batch deep.
 *
 * The mark is written only in transaction `xid` (the batch's): a handler that ended the transaction and began
 * another (`commit; begin` in one string) leaves the connection in a transaction, where no status check can see
 * the switch, and the next arm then finds nothing to mark (or no savepoint to release, which fails).
 *
 * Two statements in one query need the simple protocol, which takes no parameters: the values are escaped literals.
 *
 * @returns false when the row was not marked: the transaction is no longer `xid`.
 * @example
 * if (!(await armAttempt(tx, ledger, picked, xid, true))) return "ended";
 */
export async function armAttempt(
  tx: Queryable,
  ledger: LedgerContext,
  picked: Pick<PickedEvent, "source" | "dedupe_key">,
  xid: string,
  release: boolean,
): Promise<boolean> {
  const { escapeLiteral } = pg();
  const text =
    `${release ? `release savepoint ${EVENT_SAVEPOINT}; ` : ""}savepoint ${EVENT_SAVEPOINT}; ` +
    `update ${ledger.s}.events set status = 'dead', attempt_started_at = null, ` +
    `last_error = ${escapeLiteral(HANDLER_ENDED_TRANSACTION)} ` +
    `where source = ${escapeLiteral(picked.source)} and dedupe_key = ${escapeLiteral(picked.dedupe_key)} ` +
    `and pg_current_xact_id()::text = ${escapeLiteral(xid)}`;
  const results = (await tx.query(text)) as unknown as { rowCount: number | null }[];
  return results[results.length - 1]?.rowCount === 1;
}
