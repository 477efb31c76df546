import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { ArrivedVia } from "./claim.js";

/** A claimed event as the worker sees it. */
export interface PickedEvent {
  readonly source: string;
  readonly dedupe_key: string;
  readonly event_type: string;
  readonly payload: unknown;
  readonly received_at: Date;
  /** The claim's place in the ledger (bigint as text): with `received_at`, the receipt order the guard's ties use. */
  readonly seq: string | null;
  readonly occurred_at: Date | null;
  readonly attempts: number;
  readonly entity_type: string | null;
  readonly entity_id: string | null;
  readonly entity_version: string | null;
  readonly arrived_via: ArrivedVia;
}

// The where clause must stay identical to the predicate of the events_due index (migration 001), so the planner
// walks an index that holds only the backlog. SKIP LOCKED: an event another worker is running never blocks this one.
// One event per entity in flight: the pick takes a transaction-scoped advisory lock on the event's entity and skips
// events whose entity another transaction holds. A newer event of an entity whose event is still running (or whose
// worker froze holding the guard's row lock) is then left due instead of taking a slot that would wait on that lock;
// the lock goes with the transaction that holds it. CASE fixes the order: an event without an entity takes no lock.
// The lock key is the schema, type and id hashed to 64 bits (a collision only serialises two entities).
const pickSql = statement(
  "pick",
  (s) => `select source, dedupe_key, event_type, payload, received_at, seq, occurred_at, attempts,
  entity_type, entity_id, entity_version, arrived_via
from ${s}.events
where status in ('pending', 'failed') and next_attempt_at <= now()
  and case when entity_type is null or entity_id is null then true
    else pg_try_advisory_xact_lock(hashtextextended(${entityKeyPrefix(s)} || entity_type || chr(31) || entity_id, 0))
  end
order by next_attempt_at
limit 1
for update skip locked`,
);

/** The schema's part of an entity's lock key, as a SQL literal (schema names are letters, digits, underscores). */
function entityKeyPrefix(quotedSchema: string): string {
  return `'hookledger.entity:${quotedSchema.replaceAll('"', "")}' || chr(31)`;
}

/**
 * Locks the next due event for the calling transaction, or returns `undefined` when none is due.
 *
 * @example
 * const event = await pickEvent(tx, ledger);
 */
export async function pickEvent(tx: Queryable, ledger: LedgerContext): Promise<PickedEvent | undefined> {
  const result = await tx.query<PickedEvent>(pickSql(ledger));
  return result.rows[0];
}
