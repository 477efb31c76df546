import { type LedgerContext, type Queryable, statement } from "./context.js";
import { type CountedKey, entityFree, type PickedEvent, pendingOrFailedByKey } from "./pick.js";

// Under the row lock, each event must still be the attempt this worker counted: another worker may have counted a
// later one meanwhile (this one stalled past the back-off), and then only that one may run it. No SKIP LOCKED:
// another worker's count can hold a row for an instant (it locks, then finds the new back-off in the future), so
// this waits. The entity lock is taken next to the row lock; a row whose entity another transaction holds is
// locked all the same, so the batch can give it back. Rows are locked, and returned, in the count's order (oldest
// due first), as if the events ran one after another: events of one entity in one batch meet the version guard as
// they would in turn, and the guard makes the entity's final state the same in any order. The payload is read from
// the event's body row by its whole key; `$4`–`$5`, the span of the batch's receipt times as parameters, lets
// Postgres leave out every partition of event_bodies but the batch's days when the statement starts (a join's
// values prune only as each row is probed, after every partition has been opened: with a month of day partitions
// that cost more than the probes). The span is widened by a millisecond each way: a `Date` drops microseconds.
// The status is tested with pendingOrFailedByKey, so the rows are probed by key, never read from events_due.
const lockSql = statement(
  "pick-lock",
  (
    s,
  ) => `select e.source, e.dedupe_key, e.event_type, b.payload, e.received_at, e.seq, e.occurred_at, e.attempts,
  e.entity_type, e.entity_id, e.entity_version, e.arrived_via, e.attempt_batch::text as batch, e.attempt_slot as slot,
  e.entity_type is null or e.entity_id is null or ${entityFree(s)} as entity_free
from unnest($1::text[], $2::text[], $3::int[]) with ordinality as k (source, dedupe_key, attempts, n)
join ${s}.events e on e.source = k.source and e.dedupe_key = k.dedupe_key and e.attempts = k.attempts
join lateral (
  select payload from ${s}.event_bodies b
  where b.source = e.source and b.dedupe_key = e.dedupe_key and b.received_at = e.received_at
    and b.received_at between $4::timestamptz and $5::timestamptz
) b on true
where e.attempt_started_at is not null and ${pendingOrFailedByKey("e")}
order by k.n
for update of e`,
);

/**
 * A counted event under its row lock; `entity_free` is false when another transaction holds its entity. `batch`:
 * the count that counted this attempt (its transaction id, bigint as text), whose row of marks its arm marks
 * (arm.ts) at bit `slot` - 1 (its place in the count, 1 to 64).
 */
export type LockedEvent = PickedEvent & {
  readonly entity_free: boolean;
  readonly batch: string;
  readonly slot: number;
};

/**
 * Locks counted events, and their entities, for the calling transaction. An event missing from the result moved
 * on (another worker counted a newer attempt); one with `entity_free` false must be given back and wait its turn.
 *
 * @returns the locked events, in the order of `keys`.
 * @example
 * const locked = await lockAttempts(tx, ledger, counted);
 */
export async function lockAttempts(
  tx: Queryable,
  ledger: LedgerContext,
  keys: readonly Pick<CountedKey, "source" | "dedupe_key" | "received_at" | "attempts">[],
): Promise<LockedEvent[]> {
  if (keys.length === 0) return [];
  const times = keys.map((k) => k.received_at.getTime());
  const result = await tx.query<LockedEvent>({
    ...lockSql(ledger),
    values: [
      keys.map((k) => k.source),
      keys.map((k) => k.dedupe_key),
      keys.map((k) => k.attempts),
      new Date(Math.min(...times) - 1),
      new Date(Math.max(...times) + 1),
    ],
  });
  return result.rows;
}
