import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { EventStatus } from "./inspect.js";
import type { Outcome } from "./settle.js";

/**
 * One failed attempt of an event, as the worker (or the inline guard) recorded it: the first line is the error's
 * message, the lines after it its stack (bounded, never the payload).
 *
 * @example
 * const [first]: AttemptError[] = await attemptErrors(pool, ledger, "stripe", "evt_1");
 */
export interface AttemptError {
  readonly attempt: number;
  readonly failedAt: Date;
  readonly error: string;
}

/**
 * One event about an entity, and what the version guard made of it.
 *
 * @example
 * const stale = (await entityHistory(pool, ledger, "invoice", "in_1")).events.filter((e) => e.outcome === "stale");
 */
export interface EntityEvent {
  readonly source: string;
  readonly dedupeKey: string;
  readonly type: string;
  readonly version: string | null;
  readonly status: EventStatus;
  readonly outcome: Outcome | null;
  readonly receivedAt: Date;
  readonly settledAt: Date | null;
}

/**
 * An entity's events, newest first (at most 100), and the version the guard last applied with the event that
 * applied it.
 *
 * @example
 * const { applied, events } = await entityHistory(pool, ledger, "customer", "cus_9");
 */
export interface EntityHistory {
  readonly applied: { readonly version: string; readonly source: string; readonly dedupeKey: string } | null;
  readonly events: readonly EntityEvent[];
}

const errorsSql = statement(
  "attempt-errors",
  (s) => `select attempt, failed_at, error from ${s}.attempt_errors
where source = $1::text and dedupe_key = $2::text
order by failed_at, attempt
limit 100`,
);

const entitySql = statement(
  "entity-history",
  (s) => `select e.source, e.dedupe_key, e.event_type, e.entity_version::text as version, e.status, e.outcome,
  e.received_at, e.settled_at
from ${s}.events e
where e.entity_type = $1::text and e.entity_id = $2::text
order by e.received_at desc, e.seq desc
limit 100`,
);

const appliedSql = statement(
  "entity-applied",
  (s) => `select version::text as version, source, dedupe_key from ${s}.entity_versions
where entity_type = $1::text and entity_id = $2::text`,
);

/**
 * Every failed attempt of one event, oldest first (at most 100; migration 012 keeps them from then on).
 *
 * @example
 * for (const a of await attemptErrors(pool, ledger, "stripe", "evt_1")) console.log(a.attempt, a.error.split("\n")[0]);
 */
export async function attemptErrors(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  dedupeKey: string,
): Promise<AttemptError[]> {
  const { rows } = await db.query<{ attempt: number; failed_at: Date; error: string }>({
    ...errorsSql(ledger),
    values: [source, dedupeKey],
  });
  return rows.map((r) => ({ attempt: r.attempt, failedAt: r.failed_at, error: r.error }));
}

/**
 * The events about one entity (`entity_type`, `entity_id`) and the version the guard last applied.
 *
 * @example
 * const history = await entityHistory(pool, ledger, "invoice", "in_1");
 */
export async function entityHistory(
  db: Queryable,
  ledger: LedgerContext,
  entityType: string,
  entityId: string,
): Promise<EntityHistory> {
  const [events, applied] = await Promise.all([
    db.query<{
      source: string;
      dedupe_key: string;
      event_type: string;
      version: string | null;
      status: EventStatus;
      outcome: Outcome | null;
      received_at: Date;
      settled_at: Date | null;
    }>({ ...entitySql(ledger), values: [entityType, entityId] }),
    db.query<{ version: string; source: string; dedupe_key: string }>({
      ...appliedSql(ledger),
      values: [entityType, entityId],
    }),
  ]);
  const a = applied.rows[0];
  return {
    applied: a ? { version: a.version, source: a.source, dedupeKey: a.dedupe_key } : null,
    events: events.rows.map((r) => ({
      source: r.source,
      dedupeKey: r.dedupe_key,
      type: r.event_type,
      version: r.version,
      status: r.status,
      outcome: r.outcome,
      receivedAt: r.received_at,
      settledAt: r.settled_at,
    })),
  };
}
