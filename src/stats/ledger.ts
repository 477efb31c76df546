import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";

/**
 * The state of one source's events in the ledger. `backlog` and `oldestPendingSeconds` are the backlog now, however
 * old (an event stuck for a week must show in a 24-hour window); the other numbers are about the events received in
 * the window.
 *
 * @example
 * const [stripe]: readonly SourceLedgerStats[] = await readLedgerStats(pool, ledger, { windowMs });
 */
export interface SourceLedgerStats {
  readonly source: string;
  /** Events the worker still has to run: pending and failed (due again later). */
  readonly backlog: number;
  /** How long ago the oldest of them was received; `null` without a backlog. */
  readonly oldestPendingSeconds: number | null;
  /** Events received in the window that failed and wait for another attempt. */
  readonly failed: number;
  /** Events received in the window whose attempts ran out (dead letters, see `hookledger events requeue`). */
  readonly dead: number;
  /** Median time from receipt to settle of the events received and settled in the window; `null` with none. */
  readonly settleP50Seconds: number | null;
  /** 99th percentile of the same. */
  readonly settleP99Seconds: number | null;
}

// The backlog part repeats the events_due predicate (migration 001), so it reads only that partial index's rows.
const ledgerStatsSql = statement(
  "stats-ledger",
  (s) => `with backlog as (
  select e.source, count(*)::float8 as backlog,
    extract(epoch from now() - min(e.received_at))::float8 as oldest
  from ${s}.events e
  where e.status in ('pending', 'failed') and ($2::text is null or e.source = $2::text)
  group by e.source
), recent as (
  select e.source,
    count(*) filter (where e.status = 'failed')::float8 as failed,
    count(*) filter (where e.status = 'dead')::float8 as dead,
    percentile_cont(0.5) within group (order by extract(epoch from e.settled_at - e.received_at))
      filter (where e.status = 'settled') as p50,
    percentile_cont(0.99) within group (order by extract(epoch from e.settled_at - e.received_at))
      filter (where e.status = 'settled') as p99
  from ${s}.events e
  where e.received_at >= date_trunc('minute', now() - $1::bigint * interval '1 millisecond')
    and ($2::text is null or e.source = $2::text)
  group by e.source
)
select coalesce(b.source, r.source) as source, coalesce(b.backlog, 0) as backlog, b.oldest,
  coalesce(r.failed, 0) as failed, coalesce(r.dead, 0) as dead, r.p50::float8 as p50, r.p99::float8 as p99
from backlog b full join recent r on r.source = b.source
order by 1`,
);

interface Row {
  source: string;
  backlog: number;
  oldest: number | null;
  failed: number;
  dead: number;
  p50: number | null;
  p99: number | null;
}

/**
 * Reads the backlog, dead letters and time to settle per source from the events table (the window starts at the
 * same minute as `readDeliveryStats`'s). Each source with a backlog or with events received in the window has a
 * row.
 *
 * @example
 * const sources = await readLedgerStats(pool, ledger, { windowMs: 24 * 3_600_000, source: "stripe" });
 */
export async function readLedgerStats(
  db: Queryable,
  ledger: LedgerContext,
  options: { windowMs: number; source?: string },
): Promise<SourceLedgerStats[]> {
  const { rows } = await db.query<Row>({
    ...ledgerStatsSql(ledger),
    values: [Math.round(options.windowMs), options.source ?? null],
  });
  return rows.map((r) => ({
    source: r.source,
    backlog: r.backlog,
    oldestPendingSeconds: r.oldest,
    failed: r.failed,
    dead: r.dead,
    settleP50Seconds: r.p50,
    settleP99Seconds: r.p99,
  }));
}
