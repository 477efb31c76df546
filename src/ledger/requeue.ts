import { type LedgerContext, type Queryable, statement } from "./context.js";
import { type EventFilter, FILTER_SQL, filterValues } from "./inspect.js";
import { wakeWorkers } from "./retry.js";

/** The statuses a bulk requeue takes: settled events are re-run one by one (`retryEvents` with `force`). */
export type RequeueStatus = "dead" | "failed";

/**
 * A bulk requeue's filter: {@link EventFilter} with what to requeue required: dead or failed events, or settled
 * events whose outcome is `unhandled` (no handler ran: for instance one registered under a misspelled source or
 * type, since fixed). Settled events with any other outcome are re-run one by one (`retryEvents` with `force`).
 *
 * @example
 * const dead: RequeueFilter = { status: "dead", source: "stripe", type: "invoice.paid" };
 * const unhandled: RequeueFilter = { status: "settled", outcome: "unhandled", source: "stripe" };
 */
export type RequeueFilter = Omit<EventFilter, "status" | "outcome"> &
  (
    | { readonly status: RequeueStatus; readonly outcome?: never }
    | { readonly status: "settled"; readonly outcome: "unhandled" }
  );

/**
 * What a requeue did.
 *
 * @example
 * const { requeued, batches }: RequeueReport = await requeueEvents(pool, ledger, { status: "dead" });
 */
export interface RequeueReport {
  /** Events matching the filter when the requeue started. */
  readonly matched: number;
  /** Events made pending. */
  readonly requeued: number;
  /** Update statements run (each its own short transaction). */
  readonly batches: number;
}

const countSql = statement(
  "events-requeue-count",
  (s) => `select count(*)::int as n from ${s}.events e where ${FILTER_SQL}`,
);

const keysSql = statement(
  "events-requeue-keys",
  (s) => `select e.source, e.dedupe_key from ${s}.events e where ${FILTER_SQL} order by e.received_at, e.seq`,
);

// By primary key, with the status checked again: a row that moved on since the keys were read is left alone, and
// a row a worker holds (a failed one mid-attempt) is skipped, not waited for.
const batchSql = statement(
  "events-requeue-batch",
  (s) => `with target as (
  select e.source, e.dedupe_key
  from ${s}.events e
  join unnest($1::text[], $2::text[]) as t(source, dedupe_key)
    on e.source = t.source and e.dedupe_key = t.dedupe_key
  where e.status = $3::text and e.outcome is not distinct from $4::text
  for update of e skip locked
), done as (
  update ${s}.events e
  set status = 'pending', outcome = null, settled_at = null, next_attempt_at = now()
  from target t
  where e.source = t.source and e.dedupe_key = t.dedupe_key
  returning 1
)
select count(*)::int as n from done`,
);

/**
 * Counts the events a requeue with this filter would take now (for the confirmation).
 *
 * @example
 * const n = await countRequeue(pool, ledger, { status: "dead", source: "stripe" });
 */
export async function countRequeue(
  db: Queryable,
  ledger: LedgerContext,
  filter: RequeueFilter,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>({ ...countSql(ledger), values: filterValues(filter) });
  return rows[0]?.n ?? 0;
}

/**
 * Makes every dead, failed or settled-`unhandled` event matching `filter` pending and due now, oldest received first, in batches of
 * `batchSize` (default 1,000), each its own statement, so row locks last one short update and the workers, woken
 * by a NOTIFY after each batch, start on the first batch while the next is written. `attempts`, `last_error` and
 * `arrived_via` are kept, as in `retryEvents`: a requeued dead event gets one attempt before it is dead again.
 *
 * The keys are read once up front and each batch updates by primary key: the ledger has no index on status
 * outside the backlog, so a `limit … for update skip locked` subquery per batch would scan the table once per
 * batch, and an event that failed again meanwhile would be taken a second time.
 *
 * @example
 * const report = await requeueEvents(pool, ledger, { status: "dead", source: "stripe" }, { onBatch: (n) => bar.tick(n) });
 */
export async function requeueEvents(
  db: Queryable,
  ledger: LedgerContext,
  filter: RequeueFilter,
  options: { batchSize?: number; onBatch?: (requeued: number) => void | Promise<void> } = {},
): Promise<RequeueReport> {
  const batchSize = options.batchSize ?? 1000;
  const { rows: keys } = await db.query<{ source: string; dedupe_key: string }>({
    ...keysSql(ledger),
    values: filterValues(filter),
  });
  let requeued = 0;
  let batches = 0;
  for (let start = 0; start < keys.length; start += batchSize) {
    const batch = keys.slice(start, start + batchSize);
    const { rows } = await db.query<{ n: number }>({
      ...batchSql(ledger),
      values: [
        batch.map((k) => k.source),
        batch.map((k) => k.dedupe_key),
        filter.status,
        filter.outcome ?? null,
      ],
    });
    const n = rows[0]?.n ?? 0;
    batches += 1;
    requeued += n;
    // After the commit (autocommit), so a woken worker finds the rows.
    if (n > 0) await wakeWorkers(db, ledger);
    await options.onBatch?.(n);
  }
  return { matched: keys.length, requeued, batches };
}
