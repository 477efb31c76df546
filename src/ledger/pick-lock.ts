import { type LedgerContext, type Queryable, statement } from "./context.js";
import { type CountedKey, entityFree, HANDLER_ENDED_TRANSACTION, type PickedEvent } from "./pick.js";

// One statement takes a batch's rows and arms them, inside the batch's transaction.
//
// Lock: under the row lock each event must still be the attempt this worker counted: another worker may have counted
// a later one meanwhile (this one stalled past the back-off), and then only that one may run it. No SKIP LOCKED:
// another worker's count can hold a row for an instant (it locks, then finds the new back-off in the future), so
// this waits. The entity lock is taken next to the row lock; a row whose entity another transaction holds is locked
// all the same (not armed), so the batch can give it back. Rows are locked, and returned, in the count's order
// (oldest due first), as if the events ran one after another: events of one entity in one batch meet the version
// guard as they would in turn, and the guard makes the entity's final state the same in any order.
//
// Arm: each row to run is marked `dead` with HANDLER_ENDED_TRANSACTION. The batch's settle, a recorded failure or a
// give-back replaces the mark before the batch commits, so it is only ever committed by a handler that commits the
// batch's transaction itself (however it spells it), atomically with its writes: such an event is never run (and
// applied) again. The previous status and last_error come back, for the events the batch gives back. One statement
// for the batch, not one per event in its savepoint: the mark is an update that moves the row and writes an index
// entry (status is in the predicates of events_due and events_settled), and as a statement of its own it cost
// 75 µs of backend CPU per event on PG15.
const lockSql = statement(
  "pick-lock",
  (s) => `with locked as (
  select e.source, e.dedupe_key, e.event_type, e.payload, e.received_at, e.seq, e.occurred_at, e.attempts,
    e.entity_type, e.entity_id, e.entity_version, e.arrived_via,
    e.entity_type is null or e.entity_id is null or ${entityFree(s)} as entity_free,
    e.status as previous_status, e.last_error as previous_error, k.n
  from unnest($1::text[], $2::text[], $3::int[]) with ordinality as k (source, dedupe_key, attempts, n)
  join ${s}.events e on e.source = k.source and e.dedupe_key = k.dedupe_key and e.attempts = k.attempts
  where e.attempt_started_at is not null and e.status in ('pending', 'failed')
  order by k.n
  for update of e
), armed as (
  update ${s}.events e
  set status = 'dead', attempt_started_at = null, last_error = $4::text
  from locked
  where e.source = locked.source and e.dedupe_key = locked.dedupe_key and locked.entity_free
)
select source, dedupe_key, event_type, payload, received_at, seq, occurred_at, attempts, entity_type, entity_id,
  entity_version, arrived_via, entity_free, previous_status, previous_error
from locked order by n`,
);

/**
 * A counted event under its row lock: armed when `entity_free`; otherwise another transaction holds its entity and
 * it must be given back. `previous_*`: its status and last_error before the arm.
 */
export type LockedEvent = PickedEvent & {
  readonly entity_free: boolean;
  readonly previous_status: "pending" | "failed";
  readonly previous_error: string | null;
};

/**
 * Locks counted events, and their entities, for the calling transaction, and arms those to run: see the statement.
 * An event missing from the result moved on (another worker counted a newer attempt).
 *
 * @returns the locked events, in the order of `keys`.
 * @example
 * const locked = await lockAttempts(tx, ledger, counted);
 */
export async function lockAttempts(
  tx: Queryable,
  ledger: LedgerContext,
  keys: readonly Pick<CountedKey, "source" | "dedupe_key" | "attempts">[],
): Promise<LockedEvent[]> {
  const result = await tx.query<LockedEvent>({
    ...lockSql(ledger),
    values: [
      keys.map((k) => k.source),
      keys.map((k) => k.dedupe_key),
      keys.map((k) => k.attempts),
      HANDLER_ENDED_TRANSACTION,
    ],
  });
  return result.rows;
}
