import { type LedgerContext, type Queryable, statement } from "./context.js";
import { type EventFilter, type EventSummary, type SummaryRow, summary } from "./inspect.js";

/**
 * Which events a page of the dashboard's list shows: an {@link EventFilter} plus the entity, the dead-and-failed
 * view, and the cursor of the page before.
 *
 * @example
 * const query: BrowseQuery = { source: "stripe", troubled: true, limit: 50 };
 */
export interface BrowseQuery extends EventFilter {
  /** Events about this entity (`entity_type`), with `entityId` to narrow to one. */
  readonly entityType?: string;
  readonly entityId?: string;
  /** Failed and dead events only (`status` is then ignored). */
  readonly troubled?: boolean;
  /** The `next` of the page before: only events older than it. */
  readonly cursor?: BrowseCursor;
  /** @defaultValue 50 (at most 200) */
  readonly limit?: number;
}

/**
 * A position in the newest-first order: the last row of a page. Opaque to users, round-tripped as text.
 *
 * @example
 * const next = page.next && encodeCursor(page.next); // "1764590400123456.42"
 */
export interface BrowseCursor {
  /** `received_at` in microseconds since the epoch (Postgres keeps microseconds; a JS Date only milliseconds). */
  readonly receivedMicros: string;
  readonly seq: string;
}

/** One row of the list, with what the cursor needs. */
export interface BrowseRow extends EventSummary {
  readonly seq: string;
  readonly entity: { readonly type: string; readonly id: string } | null;
}

/** A page of the list, and the cursor of the next one (`undefined` on the last page). */
export interface BrowsePage {
  readonly events: readonly BrowseRow[];
  readonly next: BrowseCursor | undefined;
}

interface Row extends SummaryRow {
  seq: string;
  received_micros: string;
  entity_type: string | null;
  entity_id: string | null;
}

const COLUMNS = `e.source, e.dedupe_key, e.seq::text as seq, e.event_type, e.status, e.outcome, e.attempts,
  left(e.last_error, 300) as last_error, e.received_at,
  (extract(epoch from e.received_at) * 1000000)::bigint::text as received_micros,
  e.settled_at, e.next_attempt_at, e.arrived_via, e.entity_type, e.entity_id`;

/**
 * One page of events, newest received first. The query text holds only the conditions given, so the planner
 * picks the index each combination needs: `events_received` for the plain list and time ranges,
 * `events_troubled` for the dead-and-failed view, `events_entity` for an entity (migration 012).
 *
 * @example
 * const page = await browseEvents(pool, ledger, { status: "dead", limit: 50 });
 * const more = page.next && (await browseEvents(pool, ledger, { status: "dead", cursor: page.next }));
 */
export async function browseEvents(
  db: Queryable,
  ledger: LedgerContext,
  query: BrowseQuery,
): Promise<BrowsePage> {
  const limit = Math.min(Math.max(Math.trunc(query.limit ?? 50), 1), 200);
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (value: unknown, cast: string) => {
    values.push(value);
    return `$${values.length}::${cast}`;
  };
  if (query.source !== undefined) where.push(`e.source = ${param(query.source, "text")}`);
  // A literal predicate, so that it matches events_troubled's.
  if (query.troubled) where.push(`e.status in ('failed', 'dead')`);
  else if (query.status !== undefined) where.push(`e.status = ${param(query.status, "text")}`);
  if (query.outcome !== undefined) where.push(`e.outcome = ${param(query.outcome, "text")}`);
  if (query.type !== undefined) where.push(`e.event_type = ${param(query.type, "text")}`);
  if (query.entityType !== undefined) {
    where.push(`e.entity_type = ${param(query.entityType, "text")}`, "e.entity_id is not null");
    if (query.entityId !== undefined) where.push(`e.entity_id = ${param(query.entityId, "text")}`);
  }
  if (query.since !== undefined) where.push(`e.received_at >= ${param(query.since, "timestamptz")}`);
  if (query.until !== undefined) where.push(`e.received_at < ${param(query.until, "timestamptz")}`);
  if (query.cursor !== undefined) {
    const at = param(query.cursor.receivedMicros, "bigint");
    where.push(
      `(e.received_at, e.seq) < (timestamptz 'epoch' + ${at} * interval '1 microsecond', ${param(query.cursor.seq, "bigint")})`,
    );
  }
  const text = `select ${COLUMNS} from ${ledger.s}.events e
${where.length > 0 ? `where ${where.join("\n  and ")}` : ""}
order by e.received_at desc, e.seq desc
limit ${limit + 1}`;
  const { rows } = await db.query<Row>(text, values);
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return {
    events: rows.slice(0, limit).map(browseRow),
    next: last && { receivedMicros: last.received_micros, seq: last.seq },
  };
}

/**
 * A `with recursive sources` clause: every source in the ledger, read off the primary key's leading column one
 * distinct value at a time (a loose index scan: Postgres 15 has no skip scan), a handful of index lookups on any
 * ledger size. The last row is a null source.
 *
 * @example
 * `${sourcesCte(ledger.s)} select … from sources join ${ledger.s}.events e on e.source = sources.source …`
 */
export function sourcesCte(s: string): string {
  return `with recursive sources as (
  (select source from ${s}.events order by source limit 1)
  union all
  select (select e.source from ${s}.events e where e.source > sources.source order by e.source limit 1)
  from sources where sources.source is not null
)`;
}

// Each source probed for the id by primary key.
const searchSql = statement(
  "dashboard-search",
  (s) => `${sourcesCte(s)}
select ${COLUMNS}
from sources join ${s}.events e on e.source = sources.source and e.dedupe_key = $1::text
order by e.received_at desc`,
);

/**
 * The events whose dedupe key (the provider's event id, or GitHub's delivery id) is `id`, in any source.
 *
 * @example
 * const [event] = await findEventsById(pool, ledger, "evt_1QxYz");
 */
export async function findEventsById(db: Queryable, ledger: LedgerContext, id: string): Promise<BrowseRow[]> {
  const { rows } = await db.query<Row>({ ...searchSql(ledger), values: [id] });
  return rows.map(browseRow);
}

/**
 * The cursor as the text the dashboard's links carry, and back (`undefined` for anything else).
 *
 * @example
 * decodeCursor(encodeCursor({ receivedMicros: "1764590400123456", seq: "42" })); // the same cursor
 */
export function encodeCursor(cursor: BrowseCursor): string {
  return `${cursor.receivedMicros}.${cursor.seq}`;
}

/** @see {@link encodeCursor} */
export function decodeCursor(text: string): BrowseCursor | undefined {
  const match = /^(-?\d{1,19})\.(\d{1,19})$/.exec(text);
  return match ? { receivedMicros: match[1] as string, seq: match[2] as string } : undefined;
}

function browseRow(r: Row): BrowseRow {
  return {
    ...summary(r),
    seq: r.seq,
    entity: r.entity_type !== null && r.entity_id !== null ? { type: r.entity_type, id: r.entity_id } : null,
  };
}
