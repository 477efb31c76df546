import type { PoolClient } from "../db/pool.js";
import { BATCH_ENDED, markedSql } from "./arm.js";
import { type LedgerContext, statement } from "./context.js";
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

/** A counted attempt, before a transaction locks its row: what {@link countAttempts} returns. */
export interface CountedKey {
  readonly source: string;
  readonly dedupe_key: string;
  readonly event_type: string;
  /** When the event was received: where its body is (event_bodies is partitioned by it). */
  readonly received_at: Date;
  /** The number of the attempt just counted (when `exhausted`: of the last one, which ended unrecorded). */
  readonly attempts: number;
  /**
   * The count marked the event dead instead of counting an attempt: its previous attempt was its last and ended
   * without an outcome, or (`armed`) a handler of its batch committed the batch's transaction itself.
   */
  readonly exhausted: boolean;
  /** Dead because its arm was committed (arm.ts): its handler's writes may be there without its settle. */
  readonly armed: boolean;
  /** The count's transaction id (bigint as text), stamped on the event with its `slot`. */
  readonly batch: string;
  readonly slot: number;
}

/**
 * The most events one batch may hold. Each event runs in a savepoint of the batch's transaction, and a savepoint
 * that writes gets a subtransaction id. Postgres caches 64 of them per backend (PGPROC_MAX_CACHED_SUBXIDS); past
 * that the cache overflows and every other backend's snapshot must look the batch's subtransactions up in
 * pg_subtrans for as long as it runs, which slows the whole server. Releasing a savepoint does not free its slot
 * (its id stays part of the running transaction), so the cap is on events per transaction.
 *
 * @example
 * countAttempts(db, ledger, policy, Math.min(requested, MAX_BATCH));
 */
export const MAX_BATCH = 64;

// The shortest and longest back-off of a counted attempt (see countSql).
const LEASE_FLOOR_MS = 2000;
const LEASE_CAP_MS = 30_000;

/**
 * SQL that is true when the row in scope (`alias`, or none) is pending or failed, written as the statuses it is not
 * (the `events_status` constraint, migration 002, allows five), for statements that name their events by key: in
 * this form it does not imply the predicate of events_due, so the planner probes the rows by key instead of reading
 * that index whole, which it would do whenever a vacuum had last counted the index empty (docs/architecture.md,
 * "Keyed statements never plan from events_due"). A test holds the list to the constraint.
 *
 * @example
 * `update ${s}.events e set … where e.source = $1::text and e.dedupe_key = $2::text and ${pendingOrFailedByKey("e")}`
 */
export function pendingOrFailedByKey(alias?: string): string {
  return `${alias === undefined ? "" : `${alias}.`}status not in ('settled', 'dead', 'inline')`;
}

/**
 * SQL that tries the transaction-scoped advisory lock of the entity of the row in scope (`entity_type`,
 * `entity_id`): one event per entity in flight. The count tries it and skips events whose entity another
 * transaction holds (the count's own try ends with its statement); the batch's transaction takes it for good next
 * to the row lock. A newer event of an entity whose event is still running (or whose worker froze holding the
 * guard's row lock) is then left due instead of taking a slot that would wait on that lock. The lock is re-entrant
 * within a transaction, so one batch may hold several events of an entity (it runs them in turn).
 * The key is the schema, type and id hashed to 64 bits (a collision only serialises two entities).
 *
 * @example
 * `select ${entityFree(ledger.s)} from ${ledger.s}.events where …`
 */
export function entityFree(quotedSchema: string): string {
  const prefix = `'hookledger.entity:${quotedSchema.replaceAll('"', "")}' || chr(31)`;
  return `pg_try_advisory_xact_lock(hashtextextended(${prefix} || entity_type || chr(31) || entity_id, 0))`;
}

/**
 * SQL that is true when the row in scope is leased to an attempt in flight (counted, and its lease not over). Only
 * a row stamped as started has a lease: an attempt that ended (settled, failed, given back) clears the stamp.
 *
 * @example
 * `select … from ${s}.events where next_attempt_at <= now() and not coalesce(${leased()}, false)`
 */
export function leased(): string {
  return "attempt_started_at is not null and lease_until > now()";
}

// What last_error says of an attempt that ended without an outcome (format(), %s = the attempt's number).
const UNRECORDED =
  "attempt %s ended without an outcome: the worker running it exited, was killed or lost its connection";

// The where clause must stay identical to the predicate of the events_due index (migration 001), so the planner
// walks an index that holds only the backlog; `$9`, the floor (due-floor.ts), is where the walk starts. SKIP
// LOCKED: an event another worker is running never blocks this one. CASE fixes the order of the tests: an event
// under lease is passed over before its entity is tried, and an event without an entity takes no lock.
// One autocommitted statement counts a batch: each attempt is counted, stamped (with this count's transaction id as
// its batch and its place in it as its slot, which its arm marks: arm.ts) and leased for its back-off before any
// handler runs, so an attempt that never records an outcome (its process died) still counts and the event is not
// due again at once. The lease is a not-before of its own (lease_until, migration 018): next_attempt_at, the
// event's place in events_due, stays, so once the lease ends the event is at the head of any backlog again. A
// stamp left by the previous attempt means it ended unrecorded: noted in last_error, or dead if it was the last (exhausted: marked dead, never run), or if its arm was committed (a handler of its batch
// committed the transaction itself, and this event's writes may be there: dead with BATCH_ENDED, $8; the batch's row
// of marks is then forgotten by forgetMarks, unmark.ts). Such an event runs alone, because its batch may have
// died with it: a handler that ends its process takes every event of its batch down, and batching them together
// again would spend all their attempts on one poison event. The oldest runnable event decides: unrecorded, it is
// counted alone; otherwise the batch is every recorded one, and unrecorded ones further back wait until they are the
// oldest. The note goes into the attempt history (attempt_errors, migration 012) under the number of the attempt
// that ended unrecorded. The lease has a floor: until the batch's transaction takes the row locks (a round trip
// later) only the lease keeps other workers off them, and one that counts them meanwhile would take their stamps
// for a crash. And a cap: a worker killed mid-batch leaves its events due again within 30 s (§6: nothing stuck for
// more than 60 s).
const countSql = statement(
  "pick",
  (s) => `with due as (
  select source, dedupe_key, next_attempt_at, attempt_started_at is not null as unrecorded, armed,
    attempt_started_at is not null and (attempts >= $1::int or armed) as exhausted
  from ${s}.events,
    lateral (select ${markedSql(s, "events")} as armed) a
  where status in ('pending', 'failed') and next_attempt_at <= now() and next_attempt_at >= $9::timestamptz
    and case when ${leased()} then false
      when entity_type is null or entity_id is null then true else ${entityFree(s)} end
  order by next_attempt_at
  limit $7::int
  for update of events skip locked
), runnable as (
  select source, dedupe_key, unrecorded, row_number() over (order by next_attempt_at) as n
  from due where not exhausted
), chosen as (
  select source, dedupe_key, true as unrecorded, true as exhausted, armed, 0::bigint as n from due where exhausted
  union all
  select source, dedupe_key, unrecorded, false, false, n from runnable
  where case when exists (select 1 from runnable where n = 1 and unrecorded) then n = 1 else not unrecorded end
), counted as (
update ${s}.events e
set attempts = case when chosen.exhausted then e.attempts else e.attempts + 1 end,
    status = case when chosen.exhausted then 'dead' else e.status end,
    last_error = case when chosen.armed then $8::text
      when chosen.unrecorded then format($4::text, e.attempts) else e.last_error end,
    attempt_started_at = case when chosen.exhausted then null else now() end,
    attempt_batch = case when chosen.exhausted then e.attempt_batch else pg_current_xact_id()::text::bigint end,
    attempt_slot = case when chosen.exhausted then e.attempt_slot else chosen.n end,
    lease_until = case when chosen.exhausted then e.lease_until
      else now() + greatest($5::float8, least($6::float8, least($3::float8, $2::float8 * power(2, e.attempts)) * (0.5 + 0.5 * random())))
        * interval '1 millisecond' end
from chosen
where e.source = chosen.source and e.dedupe_key = chosen.dedupe_key
returning e.source, e.dedupe_key, e.event_type, e.received_at, e.attempts, chosen.exhausted, chosen.armed, chosen.n,
  chosen.unrecorded, e.last_error, e.attempt_batch, e.attempt_slot
), history as (
  insert into ${s}.attempt_errors (source, dedupe_key, attempt, error)
  select source, dedupe_key, case when exhausted then attempts else attempts - 1 end, last_error
  from counted where unrecorded
  on conflict do nothing
)
select source, dedupe_key, event_type, received_at, attempts, exhausted, armed, attempt_batch::text as batch,
  attempt_slot as slot
from counted order by n`,
);

/** What last_error says of an event whose handler ended its transaction. */
export const HANDLER_ENDED_TRANSACTION =
  "the handler ended the event's transaction itself (a commit or rollback, however spelled): what it wrote may " +
  "have been committed without the settle, so the event is not retried; fix the handler, then `hookledger events retry`";

/** The retry policy the count needs: the back-off given to the attempt should it end unrecorded. */
export interface CountPolicy {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

// The count's own transaction turns bitmap and sequential scans off, so that it walks events_due in order and
// stops after `limit` rows whatever the statistics say. When they predate a burst (autovacuum's ANALYZE ran while
// little was due) the planner expects fewer due rows than the batch's limit, and with due times out of the table's
// order it chose a bitmap scan of the whole backlog, sorted it, and tried the entity lock of every due row: measured
// on PG15 with 20,000 due events, 21 ms per count of 50 (130 µs of server time per event, 40 % of the worker's
// database time) where the walk takes 0.2 ms. The settings end with the count's transaction: handlers never see
// them (test/db/pick-index.test.ts).
const COUNT_BEGIN = "begin; set local enable_bitmapscan = off; set local enable_seqscan = off";

/**
 * Runs one statement that walks events_due in its own transaction with those settings (the count's, and the
 * floor's: due-floor.ts), on a client outside a transaction, and returns its rows.
 *
 * @example
 * const rows = await walkInOrder<{ floor: Date }>(client, { ...floorSql(ledger), values: [1000] });
 */
export async function walkInOrder<R extends object>(
  db: PoolClient,
  query: { readonly name: string; readonly text: string; readonly values: unknown[] },
): Promise<R[]> {
  await db.query(COUNT_BEGIN);
  try {
    const { rows } = await db.query<R>(query);
    await db.query("commit");
    return rows;
  } catch (error) {
    // A statement the server refused leaves the transaction open: end it. Should the rollback fail too (the
    // connection is gone), the caller's error handling destroys the connection.
    await db.query("rollback").catch(() => {});
    throw error;
  }
}

/**
 * Counts the attempts of a batch of up to `limit` due events (1 to {@link MAX_BATCH}), oldest due first, in one
 * statement and its own transaction (call it on a client outside a transaction): attempts + 1, stamped as started,
 * leased for the attempt's back-off (2 to 30 s) without losing its place in the queue. Then run them in one transaction that takes their rows with
 * `lockAttempts`. An event whose previous attempt ended unrecorded is counted alone; one with no attempt left is
 * marked dead instead (`exhausted`). With a `floor` (due-floor.ts) only events due at or after it are looked at.
 *
 * @returns the counted attempts, oldest due first; empty when nothing is due.
 * @example
 * const counted = await countAttempts(client, ledger, { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 3_600_000 }, 50);
 */
export async function countAttempts(
  db: PoolClient,
  ledger: LedgerContext,
  policy: CountPolicy,
  limit: number,
  floor?: Date,
): Promise<CountedKey[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_BATCH) {
    throw new RangeError(`a batch holds 1 to ${MAX_BATCH} events, got ${limit}`);
  }
  return walkInOrder<CountedKey>(db, {
    ...countSql(ledger),
    values: [
      policy.maxAttempts,
      policy.baseDelayMs,
      policy.maxDelayMs,
      UNRECORDED,
      LEASE_FLOOR_MS,
      LEASE_CAP_MS,
      limit,
      BATCH_ENDED,
      floor ?? "-infinity",
    ],
  });
}
