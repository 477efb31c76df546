import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { ArrivedVia } from "./claim.js";

/** An event whose attempt was counted, as the worker sees it. */
export interface PickedEvent {
  readonly source: string;
  readonly dedupe_key: string;
  readonly event_type: string;
  readonly payload: unknown;
  readonly received_at: Date;
  /** The claim's place in the ledger (bigint as text): with `received_at`, the receipt order the guard's ties use. */
  readonly seq: string | null;
  readonly occurred_at: Date | null;
  /** The number of this attempt: the count already includes it. */
  readonly attempts: number;
  readonly entity_type: string | null;
  readonly entity_id: string | null;
  readonly entity_version: string | null;
  readonly arrived_via: ArrivedVia;
}

/** What {@link countAttempt} found: an attempt to run, or an event whose last attempt ended unrecorded and was the last. */
export type CountedAttempt =
  | { readonly kind: "attempt"; readonly event: PickedEvent }
  | { readonly kind: "exhausted"; readonly event: PickedEvent };

// The shortest and longest back-off of a counted attempt (see countSql).
const LEASE_FLOOR_MS = 2000;
const LEASE_CAP_MS = 30_000;

// One event per entity in flight: the count tries a transaction-scoped advisory lock on the event's entity and skips
// events whose entity another transaction holds (the count's own try ends with its statement). The attempt's
// transaction takes the lock for good next to the row lock. A newer event of an entity whose event is still running
// (or whose worker froze holding the guard's row lock) is then left due instead of taking a slot that would wait on
// that lock. CASE fixes the order: an event without an entity takes no lock. The lock key is the schema, type and id
// hashed to 64 bits (a collision only serialises two entities).
function entityFree(quotedSchema: string): string {
  const prefix = `'hookledger.entity:${quotedSchema.replaceAll('"', "")}' || chr(31)`;
  return `pg_try_advisory_xact_lock(hashtextextended(${prefix} || entity_type || chr(31) || entity_id, 0))`;
}

// What last_error says of an attempt that ended without an outcome (format(), %s = the attempt's number).
const UNRECORDED =
  "attempt %s ended without an outcome: the worker running it exited, was killed or lost its connection";

// The where clause must stay identical to the predicate of the events_due index (migration 001), so the planner
// walks an index that holds only the backlog. SKIP LOCKED: an event another worker is running never blocks this one.
// One autocommitted statement: the attempt is counted, stamped and given its back-off before the handler runs, so
// an attempt that never records an outcome (its process died) still counts and the event is not due again at once.
// A stamp left by the previous attempt means it ended unrecorded: noted in last_error, or dead if it was the last.
// The back-off has a floor: until the attempt's transaction takes the row lock (a round trip later) only the
// back-off keeps other workers off it, and one that counts it meanwhile would take its stamp for a crash. And a cap:
// a worker killed mid-attempt leaves its event due again within 30 s (§6: nothing stuck for more than 60 s).
const countSql = statement(
  "pick",
  (s) => `with due as (
  select source, dedupe_key, attempts, attempt_started_at is not null and attempts >= $1::int as exhausted,
    attempt_started_at is not null as unrecorded
  from ${s}.events
  where status in ('pending', 'failed') and next_attempt_at <= now()
    and case when entity_type is null or entity_id is null then true else ${entityFree(s)} end
  order by next_attempt_at
  limit 1
  for update skip locked
)
update ${s}.events e
set attempts = case when due.exhausted then e.attempts else e.attempts + 1 end,
    status = case when due.exhausted then 'dead' else e.status end,
    last_error = case when due.unrecorded then format($4::text, e.attempts) else e.last_error end,
    attempt_started_at = case when due.exhausted then null else now() end,
    next_attempt_at = case when due.exhausted then e.next_attempt_at
      else now() + greatest($5::float8, least($6::float8, least($3::float8, $2::float8 * power(2, e.attempts)) * (0.5 + 0.5 * random())))
        * interval '1 millisecond' end
from due
where e.source = due.source and e.dedupe_key = due.dedupe_key
returning e.source, e.dedupe_key, e.event_type, e.payload, e.received_at, e.seq, e.occurred_at, e.attempts,
  e.entity_type, e.entity_id, e.entity_version, e.arrived_via, due.exhausted`,
);

// Under the row lock, the event must still be the attempt this worker counted: another worker may have counted a
// later one meanwhile (this one stalled past the back-off), and then only that one may run it. No SKIP LOCKED: another
// worker's pick can hold the row for an instant (it locks, then finds the new back-off in the future), so this waits.
const lockSql = statement(
  "pick-lock",
  (s) => `select entity_type is null or entity_id is null or ${entityFree(s)} as entity_free from ${s}.events
where source = $1::text and dedupe_key = $2::text and attempts = $3::int
  and attempt_started_at is not null and status in ('pending', 'failed')
for update`,
);

// A worker that stopped before its handler finished gives the attempt back: due again at once, not counted.
const uncountSql = statement(
  "pick-uncount",
  (s) => `update ${s}.events
set attempts = attempts - 1, attempt_started_at = null, next_attempt_at = now()
where source = $1::text and dedupe_key = $2::text and attempts = $3::int
  and attempt_started_at is not null and status in ('pending', 'failed')`,
);

// Written inside the attempt's transaction, after the handler's savepoint: the settle or the recorded failure
// replaces it. It is committed only if the handler commits the transaction itself (however it spells it), and then
// atomically with the handler's writes: the event is dead and never runs (and applies) again.
const armSql = statement(
  "pick-arm",
  (s) => `update ${s}.events
set status = 'dead', attempt_started_at = null, last_error = $3::text
where source = $1::text and dedupe_key = $2::text
returning pg_current_xact_id()::text as xid`,
);

/** What last_error says of an event whose handler ended its transaction. */
export const HANDLER_ENDED_TRANSACTION =
  "the handler ended the event's transaction itself (a commit or rollback, however spelled): what it wrote may " +
  "have been committed without the settle, so the event is not retried; fix the handler, then `hookledger events retry`";

/**
 * Inside the attempt's transaction, before the handler runs: makes a commit by anyone but hookledger leave the
 * event dead with {@link HANDLER_ENDED_TRANSACTION}. The settle, or rolling back to the handler's savepoint, undoes it.
 * Returns the transaction's id, which the settle checks: a handler that ended it and began another (`commit; begin`
 * in one string) leaves the connection in a transaction, where no status check can see the switch.
 *
 * @example
 * await tx.query("savepoint handler");
 * const xid = await armAttempt(tx, ledger, picked);
 */
export async function armAttempt(tx: Queryable, ledger: LedgerContext, picked: PickedEvent): Promise<string> {
  const { rows } = await tx.query<{ xid: string }>({
    ...armSql(ledger),
    values: [picked.source, picked.dedupe_key, HANDLER_ENDED_TRANSACTION],
  });
  return rows[0]?.xid ?? "";
}

/** The retry policy the count needs: the back-off given to the attempt should it end unrecorded. */
export interface CountPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * Counts an attempt of the next due event in a statement of its own (call it outside a transaction): attempts + 1,
 * stamped as started, due again after the attempt's back-off (2 to 30 s). Then run the attempt in a transaction that takes
 * the row with {@link lockAttempt}. An event whose previous attempt ended unrecorded with no attempt left is marked
 * dead instead (`exhausted`).
 *
 * @returns `undefined` when nothing is due.
 * @example
 * const counted = await countAttempt(client, ledger, { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 3_600_000 });
 */
export async function countAttempt(
  db: Queryable,
  ledger: LedgerContext,
  policy: CountPolicy,
): Promise<CountedAttempt | undefined> {
  const result = await db.query<PickedEvent & { exhausted: boolean }>({
    ...countSql(ledger),
    values: [
      policy.maxAttempts,
      policy.baseDelayMs,
      policy.maxDelayMs,
      UNRECORDED,
      LEASE_FLOOR_MS,
      LEASE_CAP_MS,
    ],
  });
  const row = result.rows[0];
  if (!row) return undefined;
  const { exhausted, ...event } = row;
  return { kind: exhausted ? "exhausted" : "attempt", event };
}

/**
 * Locks a counted event, and its entity, for the calling transaction. `moved`: the event is no longer at the attempt
 * that was counted (another worker counted a newer one); `entity-busy`: another event of its entity is running, so
 * give this attempt back ({@link uncountAttempt}) and let it wait its turn.
 *
 * @example
 * if ((await lockAttempt(tx, ledger, counted.event)) !== "locked") return;
 */
export async function lockAttempt(
  tx: Queryable,
  ledger: LedgerContext,
  picked: PickedEvent,
): Promise<"locked" | "moved" | "entity-busy"> {
  const result = await tx.query<{ entity_free: boolean }>({
    ...lockSql(ledger),
    values: [picked.source, picked.dedupe_key, picked.attempts],
  });
  const row = result.rows[0];
  return !row ? "moved" : row.entity_free ? "locked" : "entity-busy";
}

/**
 * Gives a counted attempt back (the worker stopped before it ran to the end): the event is due again at once.
 *
 * @example
 * await uncountAttempt(pool, ledger, picked);
 */
export async function uncountAttempt(
  db: Queryable,
  ledger: LedgerContext,
  picked: PickedEvent,
): Promise<void> {
  await db.query({ ...uncountSql(ledger), values: [picked.source, picked.dedupe_key, picked.attempts] });
}
