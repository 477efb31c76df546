import type { Step } from "../db/pipeline.js";
import { pg } from "../deps.js";
import type { LedgerContext, Queryable } from "./context.js";
import type { LockedEvent } from "./pick-lock.js";

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

// The mark: the event's slot's bit in its batch's row of batch_marks (migration 015), which only transaction `xid` (the
// batch's) can see to update: a handler that ended the transaction and began another (`commit; begin`) leaves the
// connection in a transaction where no status check sees the switch, and the next arm then finds no row. Prepared with
// SQL PREPARE, once per session, so that the update is not planned again for every event (measured on PG15: 25 µs of
// backend CPU per event instead of 55-70 µs for the same statement sent as text); the arm's steps bind it by name ahead
// of the handler's first query (worker/arm-gate.ts), or EXECUTE it in a simple-protocol query. One mark per event, in
// its savepoint, rather than one marking the whole batch when it locks its rows: a handler's commit would then make the
// events whose turn had not come dead too, for a moment or, should the worker die then, for good. The mark used to be
// the event's own row set dead, a third update through every index of events per event: ~120 µs of ~330 µs of database
// time per event (docs/benchmarks.md, "What the arm cost").
// Short enough that every schema's name fits an identifier's 63 bytes (a schema has at most 51, context.ts): Postgres
// would cut a longer one, and then never find it by the name given.
const armName = (ledger: LedgerContext) => `hl_arm_${ledger.schema}`;
const markText = (ledger: LedgerContext) =>
  `update ${ledger.s}.batch_marks set armed = armed | (1::bigint << ($2::int - 1))
where batch = $1::bigint and xid = pg_current_xact_id()::text::bigint`;

/**
 * SQL that is true when the event row `alias` of schema `quotedSchema` is stamped with an attempt whose arm is
 * marked in a row of `batch_marks` this statement can see: committed, so its writes may be durable without its
 * settle (or, inside the batch's own transaction, armed and not rolled back to its savepoint).
 *
 * @example
 * `select ${markedSql(ledger.s, "e")} as armed from ${ledger.s}.events e where …`
 */
export function markedSql(quotedSchema: string, alias: string): string {
  // CASE, not AND: the probe runs only for a stamped row, never for each fresh row the pick walks.
  return `case when ${alias}.attempt_started_at is null or ${alias}.attempt_slot is null then false else exists (
    select 1 from ${quotedSchema}.batch_marks m where m.batch = ${alias}.attempt_batch
      and m.armed & (1::bigint << (${alias}.attempt_slot - 1)) <> 0) end`;
}

const BATCH_ID = /^[0-9]{1,19}$/;

/**
 * SQL that gives the batch `batch` (the count's transaction id, which stamped its events) its row of marks in the
 * calling transaction. Run it in the batch's first round trip, before any arm; the settle deletes the row, so only a
 * handler that commits the transaction itself makes it durable.
 *
 * @example
 * await tx.query(`begin; ${openMarks(ledger, keys[0].batch)}`);
 */
export function openMarks(ledger: LedgerContext, batch: string): string {
  if (!BATCH_ID.test(batch))
    throw new TypeError(`a batch id is a transaction id, got ${JSON.stringify(batch)}`);
  return `insert into ${ledger.s}.batch_marks (batch, xid) values (${batch}, pg_current_xact_id()::text::bigint)`;
}

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
  await tx.query(`prepare "${armName(ledger)}" (bigint, int) as ${markText(ledger)}`);
}

/**
 * The statements that open the event's savepoint and arm the event: inside the savepoint its slot is marked in its
 * batch's row (see {@link openMarks}, {@link BATCH_ENDED}). Rolling back to the savepoint undoes the mark and the
 * settle deletes the row, so a mark is only ever committed by a handler that commits the batch's transaction
 * itself (however it spells it), atomically with its writes: whoever meets the event then makes it dead instead of
 * running (and applying) it again. `release`: the previous event's savepoint is released first, so savepoints do not
 * nest a batch deep. Needs {@link prepareArm} on the session first. The last step's row count is 1 when the event
 * was marked, 0 when the transaction is no longer the batch's.
 *
 * `plans`: the `plan_cache_mode` the handlers get back, set before the savepoint (so no rollback to it undoes it),
 * on the first arm of a batch whose own statements ran with generic plans.
 *
 * @example
 * const sent = queryAfter(client, armSteps(ledger, picked, true), args);
 */
export function armSteps(
  ledger: LedgerContext,
  picked: Pick<LockedEvent, "batch" | "slot">,
  release: boolean,
  plans?: string,
): Step[] {
  const steps: Step[] = [];
  if (plans !== undefined) steps.push({ text: `set local plan_cache_mode = ${pg().escapeLiteral(plans)}` });
  if (release) steps.push({ text: `release savepoint ${EVENT_SAVEPOINT}` });
  steps.push({ text: `savepoint ${EVENT_SAVEPOINT}` });
  // Bound by name: a statement prepared with SQL PREPARE is the same server object a protocol Parse makes.
  steps.push({ statement: armName(ledger), values: [picked.batch, String(Number(picked.slot))] });
  return steps;
}

/**
 * The arm's steps ({@link armSteps}) as one simple-protocol query, for when they cannot go ahead of a handler's
 * query (`queryAfter` declined it) or there is none. Its last result's row count is the mark's.
 *
 * @example
 * const results = await tx.query(armText(ledger, picked, false));
 */
export function armText(
  ledger: LedgerContext,
  picked: Pick<LockedEvent, "batch" | "slot">,
  release: boolean,
  plans?: string,
): string {
  // Several statements in one query need the simple protocol, which takes no parameters: the values are escaped.
  const { escapeLiteral } = pg();
  return armSteps(ledger, picked, release, plans)
    .map((step) =>
      "text" in step
        ? step.text
        : `execute "${step.statement}" (${step.values.map((v) => escapeLiteral(v)).join(", ")})`,
    )
    .join("; ");
}

/** The row count of an arm sent as {@link armText}: its last statement's. */
export const armedRows = (results: unknown): number | null => {
  const list = results as { rowCount: number | null }[];
  return list[list.length - 1]?.rowCount ?? null;
};

/**
 * Opens the event's savepoint and arms it ({@link armSteps}) in a round trip of its own.
 *
 * @returns false when nothing was marked: the transaction is no longer the batch's.
 * @example
 * if (!(await armAttempt(tx, ledger, picked, true))) return "ended";
 */
export async function armAttempt(
  tx: Queryable,
  ledger: LedgerContext,
  picked: Pick<LockedEvent, "batch" | "slot">,
  release: boolean,
  plans?: string,
): Promise<boolean> {
  return armedRows(await tx.query(armText(ledger, picked, release, plans))) === 1;
}
