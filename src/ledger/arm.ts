import { pg } from "../deps.js";
import type { LedgerContext, Queryable } from "./context.js";
import type { PickedEvent } from "./pick.js";

/** The savepoint each event of a batch runs in; a handler's failure rolls back to it and no further. */
export const EVENT_SAVEPOINT = "hookledger_event";

/**
 * What last_error says of an event whose arm was committed: a handler, its own or one run after it in its batch,
 * committed the batch's transaction itself. The event's own handler's record replaces it with
 * HANDLER_ENDED_TRANSACTION (pick.ts).
 *
 * @example
 * assert.equal(row.last_error, BATCH_ENDED);
 */
export const BATCH_ENDED =
  "a handler of its batch ended the transaction itself (a commit or rollback, however spelled), this event's " +
  "handler or one run after it: what this event's handler wrote may have been committed without the settle, so the " +
  "event is not retried; fix the handler, then `hookledger events retry`";

// The mark: dead with BATCH_ENDED, only in transaction $3 (the batch's). Prepared with SQL PREPARE, once per
// session, so that the savepoint and the mark travel in one simple-protocol query without escaping values into
// SQL text or planning the update again for every event (measured on PG15: 25 µs of backend CPU per event instead
// of 55-70 µs for the same update sent as text). One mark per event, in its savepoint, rather than one statement
// arming the whole batch when it locks its rows (35 µs of backend CPU less per event): a handler's commit would
// then make the events whose turn had not come dead too, for a moment or, should the worker die then, for good.
const armName = (ledger: LedgerContext) => `hookledger_arm_${ledger.schema}`;
const armText = (ledger: LedgerContext) =>
  `update ${ledger.s}.events set status = 'dead', attempt_started_at = null,
  last_error = ${pg().escapeLiteral(BATCH_ENDED)}
where source = $1::text and dedupe_key = $2::text and pg_current_xact_id()::text = $3::text`;

/**
 * SQL that tells whether the arm's statement is prepared on this session. The batch asks in its first round trip and
 * prepares it in its own transaction when it is not ({@link prepareArm}): on the server connection that runs the
 * batch, whatever a pooler in front of it does between transactions, and whatever `DEALLOCATE ALL` ran before.
 *
 * @example
 * `begin; select ${armPrepared(ledger)} as prepared`
 */
export function armPrepared(ledger: LedgerContext): string {
  return `exists (select 1 from pg_prepared_statements where name = ${pg().escapeLiteral(armName(ledger))})`;
}

/**
 * Prepares the arm's statement on the session (a prepared statement outlives the transaction that made it, even one
 * rolled back). Call it only when {@link armPrepared} said it is not.
 *
 * @example
 * if (!prepared) await prepareArm(tx, ledger);
 */
export async function prepareArm(tx: Queryable, ledger: LedgerContext): Promise<void> {
  await tx.query(`prepare "${armName(ledger)}" (text, text, text) as ${armText(ledger)}`);
}

/**
 * Opens the event's savepoint and arms the event, in one round trip: inside the savepoint its row is marked `dead`
 * with {@link BATCH_ENDED}. The settle, or rolling back to the savepoint, replaces the mark, so it is
 * only ever committed by a handler that commits the batch's transaction itself (however it spells it), atomically
 * with its writes: the event is then never run (and applied) again. `release`: the previous event's savepoint is
 * released first, so savepoints do not nest a batch deep. Needs {@link prepareArm} on the session first.
 *
 * The mark is written only in transaction `xid` (the batch's): a handler that ended the transaction and began
 * another (`commit; begin` in one string) leaves the connection in a transaction, where no status check can see
 * the switch, and the next arm then finds nothing to mark (or no savepoint to release, which fails).
 *
 * `plans`: the `plan_cache_mode` the handlers get back, set before the savepoint (so no rollback to it undoes it),
 * on the first arm of a batch whose own statements ran with generic plans.
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
  plans?: string,
): Promise<boolean> {
  // Two statements in one query need the simple protocol, which takes no parameters: the values are escaped.
  const { escapeLiteral } = pg();
  const text =
    `${plans === undefined ? "" : `set local plan_cache_mode = ${escapeLiteral(plans)}; `}` +
    `${release ? `release savepoint ${EVENT_SAVEPOINT}; ` : ""}savepoint ${EVENT_SAVEPOINT}; ` +
    `execute "${armName(ledger)}" (${escapeLiteral(picked.source)}, ${escapeLiteral(picked.dedupe_key)}, ${escapeLiteral(xid)})`;
  const results = (await tx.query(text)) as unknown as { rowCount: number | null }[];
  return results[results.length - 1]?.rowCount === 1;
}
