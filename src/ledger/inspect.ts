import type { ArrivedVia } from "./claim.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { Outcome } from "./settle.js";

/** Where an event is in its lifecycle (docs/architecture.md §3); `inline` while an app's own route runs it. */
export type EventStatus = "pending" | "failed" | "settled" | "dead" | "inline";

/** Every status, in lifecycle order. */
export const EVENT_STATUSES: readonly EventStatus[] = ["pending", "failed", "settled", "dead", "inline"];

/** Every outcome of a settled event. */
export const EVENT_OUTCOMES: readonly Outcome[] = ["applied", "stale", "unhandled", "ignored"];

/**
 * Which events to look at. Every field narrows; an absent one does not. The time range is on `received_at`,
 * `since` inclusive, `until` exclusive.
 *
 * @example
 * const filter: EventFilter = { source: "stripe", status: "dead", since: new Date(Date.now() - 86_400_000) };
 */
export interface EventFilter {
  readonly source?: string;
  readonly status?: EventStatus;
  readonly outcome?: Outcome;
  /** The event type, exactly (`invoice.paid`). */
  readonly type?: string;
  readonly since?: Date;
  readonly until?: Date;
}

/**
 * One row of the ledger as the inspection commands show it.
 *
 * @example
 * const { source, dedupeKey, status, attempts }: EventSummary = (await listEvents(pool, ledger, {}))[0];
 */
export interface EventSummary {
  readonly source: string;
  readonly dedupeKey: string;
  readonly type: string;
  readonly status: EventStatus;
  readonly outcome: Outcome | null;
  readonly attempts: number;
  readonly lastError: string | null;
  readonly receivedAt: Date;
  readonly settledAt: Date | null;
  /** When a pending or failed event is due (the worker's next try). */
  readonly nextAttemptAt: Date;
  readonly arrivedVia: ArrivedVia;
}

/**
 * Everything the ledger keeps about one event, with its duplicate deliveries.
 *
 * @example
 * const event: EventDetail | undefined = await getEvent(pool, ledger, "stripe", "evt_1");
 */
export interface EventDetail extends EventSummary {
  readonly payload: unknown;
  /** The headers kept at receipt (never signatures or tokens). */
  readonly headers: Readonly<Record<string, string>>;
  readonly bodyBytes: number;
  /** The raw body's sha256, hex. */
  readonly bodySha256: string;
  readonly occurredAt: Date | null;
  readonly entity: { type: string; id: string; version: string | null } | null;
  /** Deliveries after the first. */
  readonly duplicates: number;
  /** Duplicates whose body differed from the first delivery's. */
  readonly bodyMismatches: number;
  readonly lastDuplicateAt: Date | null;
  /** Which of the source's secrets verified the first delivery (its index in the list), when one did. */
  readonly secretIndex: number | null;
}

/**
 * The `where` clause of an {@link EventFilter} on `events e`, parameters `$1` to `$6` (see {@link filterValues});
 * shared by list and requeue so both read the same events.
 *
 * @example
 * const text = `select count(*) from ${ledger.s}.events e where ${FILTER_SQL}`;
 */
export const FILTER_SQL = `($1::text is null or e.source = $1::text)
  and ($2::text is null or e.status = $2::text)
  and ($3::text is null or e.outcome = $3::text)
  and ($4::text is null or e.event_type = $4::text)
  and ($5::timestamptz is null or e.received_at >= $5::timestamptz)
  and ($6::timestamptz is null or e.received_at < $6::timestamptz)`;

/**
 * The filter as the values of {@link FILTER_SQL}'s `$1` to `$6`.
 *
 * @example
 * await pool.query(text, filterValues({ status: "dead" }));
 */
export function filterValues(filter: EventFilter): unknown[] {
  return [
    filter.source ?? null,
    filter.status ?? null,
    filter.outcome ?? null,
    filter.type ?? null,
    filter.since ?? null,
    filter.until ?? null,
  ];
}

const SUMMARY_COLUMNS = `e.source, e.dedupe_key, e.event_type, e.status, e.outcome, e.attempts, e.last_error,
  e.received_at, e.settled_at, e.next_attempt_at, e.arrived_via`;

const listSql = statement(
  "events-list",
  (s) => `select ${SUMMARY_COLUMNS}
from ${s}.events e
where ${FILTER_SQL}
order by e.received_at desc, e.seq desc
limit $7::int`,
);

const showSql = statement(
  "events-show",
  (s) => `select ${SUMMARY_COLUMNS}, b.payload, b.headers, length(b.body) as body_bytes,
  encode(e.body_sha256, 'hex') as body_sha256, e.occurred_at, e.entity_type, e.entity_id,
  e.entity_version::text as entity_version, e.secret_index,
  coalesce(d.count, 0)::int as duplicates, coalesce(d.body_mismatches, 0)::int as body_mismatches,
  d.last_seen_at
from ${s}.events e
join ${s}.event_bodies b on b.source = e.source and b.dedupe_key = e.dedupe_key and b.received_at = e.received_at
left join ${s}.duplicates d on d.source = e.source and d.dedupe_key = e.dedupe_key
where e.source = $1::text and e.dedupe_key = $2::text`,
);

/** An events row as {@link FILTER_SQL}'s queries select it (snake_case, as Postgres returns it). */
export interface SummaryRow {
  source: string;
  dedupe_key: string;
  event_type: string;
  status: EventStatus;
  outcome: Outcome | null;
  attempts: number;
  last_error: string | null;
  received_at: Date;
  settled_at: Date | null;
  next_attempt_at: Date;
  arrived_via: ArrivedVia;
}

interface DetailRow extends SummaryRow {
  payload: unknown;
  headers: Record<string, string>;
  body_bytes: number;
  body_sha256: string;
  occurred_at: Date | null;
  entity_type: string | null;
  entity_id: string | null;
  entity_version: string | null;
  duplicates: number;
  body_mismatches: number;
  last_seen_at: Date | null;
  secret_index: number | null;
}

/**
 * Lists events matching `filter`, newest received first, at most `limit` (default 50).
 *
 * @example
 * const dead = await listEvents(pool, ledger, { source: "stripe", status: "dead" }, 20);
 */
export async function listEvents(
  db: Queryable,
  ledger: LedgerContext,
  filter: EventFilter,
  limit = 50,
): Promise<EventSummary[]> {
  const { rows } = await db.query<SummaryRow>({
    ...listSql(ledger),
    values: [...filterValues(filter), limit],
  });
  return rows.map(summary);
}

/**
 * Reads one event with its duplicate count, or `undefined` when the ledger has no such event.
 *
 * @example
 * const event = await getEvent(pool, ledger, "github", "8f2c…");
 */
export async function getEvent(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  dedupeKey: string,
): Promise<EventDetail | undefined> {
  const { rows } = await db.query<DetailRow>({ ...showSql(ledger), values: [source, dedupeKey] });
  const r = rows[0];
  if (!r) return undefined;
  return {
    ...summary(r),
    payload: r.payload,
    headers: r.headers,
    bodyBytes: r.body_bytes,
    bodySha256: r.body_sha256,
    occurredAt: r.occurred_at,
    entity:
      r.entity_type !== null && r.entity_id !== null
        ? { type: r.entity_type, id: r.entity_id, version: r.entity_version }
        : null,
    duplicates: r.duplicates,
    bodyMismatches: r.body_mismatches,
    lastDuplicateAt: r.last_seen_at,
    secretIndex: r.secret_index,
  };
}

const bodySql = statement(
  "events-body",
  (s) => `select b.body from ${s}.events e
join ${s}.event_bodies b on b.source = e.source and b.dedupe_key = e.dedupe_key and b.received_at = e.received_at
where e.source = $1::text and e.dedupe_key = $2::text`,
);

/**
 * The raw body of an event's first delivery, byte for byte, or `undefined` when the ledger has no such event.
 *
 * @example
 * const bytes = await getEventBody(pool, ledger, "stripe", "evt_1");
 */
export async function getEventBody(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  dedupeKey: string,
): Promise<Buffer | undefined> {
  const { rows } = await db.query<{ body: Buffer }>({ ...bodySql(ledger), values: [source, dedupeKey] });
  return rows[0]?.body;
}

/**
 * An events row as the {@link EventSummary} the inspection commands and the dashboard show.
 *
 * @example
 * const events = rows.map(summary);
 */
export function summary(r: SummaryRow): EventSummary {
  return {
    source: r.source,
    dedupeKey: r.dedupe_key,
    type: r.event_type,
    status: r.status,
    outcome: r.outcome,
    attempts: r.attempts,
    lastError: r.last_error,
    receivedAt: r.received_at,
    settledAt: r.settled_at,
    nextAttemptAt: r.next_attempt_at,
    arrivedVia: r.arrived_via,
  };
}
