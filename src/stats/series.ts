import { sourcesCte } from "../ledger/browse.js";
import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";

/**
 * One time bucket of the dashboard's health charts, summed over the sources asked for.
 *
 * @example
 * const perSecond = bucket.accepted / (bucketMs / 1000);
 */
export interface HealthBucket {
  readonly at: Date;
  readonly accepted: number;
  readonly duplicates: number;
  readonly refused: number;
  readonly unavailable: number;
  readonly mismatches: number;
  /** Seconds from receipt to settle of the events settled in the bucket; `null` when none settled. */
  readonly settleP50: number | null;
  readonly settleP99: number | null;
  readonly settled: number;
}

/**
 * The health charts' data over a window, in equal buckets.
 *
 * @example
 * const { buckets, bucketMs } = await healthSeries(pool, ledger, { windowMs: 3_600_000 });
 */
export interface HealthSeries {
  readonly bucketMs: number;
  readonly buckets: readonly HealthBucket[];
  /** The settle times come from the newest this many settled events of each source at most. */
  readonly settleSample: number;
}

// At most 50,000 settled events per source feed the settle-time percentiles: over a day of a busy ledger
// (a million events), reading them all took seconds, and the newest 50,000 show the same trend.
const SETTLE_SAMPLE = 50_000;

const deliveriesSql = statement(
  "health-deliveries",
  (s) => `with w as (select now() - $1::bigint * interval '1 millisecond' as since)
select date_bin($2::bigint * interval '1 millisecond', d.minute, timestamptz 'epoch') as at,
  sum(d.accepted)::float8 as accepted, sum(d.duplicates + d.retried)::float8 as duplicates,
  sum(d.refused)::float8 as refused, sum(d.unavailable)::float8 as unavailable,
  sum(d.mismatches)::float8 as mismatches
from w join ${s}.delivery_stats d on d.minute >= date_trunc('minute', w.since)
where $3::text is null or d.source = $3::text
group by 1 order by 1`,
);

// Per source through events_settled (source, settled_at), so each scan is a range of that index, newest first.
const settleSql = statement(
  "health-settle",
  (s) => `${sourcesCte(s)}, recent as (
  select x.settled_at, x.seconds
  from sources
  cross join lateral (
    select e.settled_at, extract(epoch from e.settled_at - e.received_at)::float8 as seconds
    from ${s}.events e
    where e.status = 'settled' and e.source = sources.source
      and e.settled_at >= now() - $1::bigint * interval '1 millisecond'
    order by e.settled_at desc
    limit $4::int
  ) x
  where sources.source is not null and ($3::text is null or sources.source = $3::text)
)
select date_bin($2::bigint * interval '1 millisecond', settled_at, timestamptz 'epoch') as at,
  count(*)::float8 as settled,
  percentile_cont(0.5) within group (order by seconds) as p50,
  percentile_cont(0.99) within group (order by seconds) as p99
from recent group by 1 order by 1`,
);

/**
 * Deliveries (from `delivery_stats`) and settle times (from the ledger) over the last `windowMs`, in buckets of
 * `bucketMs`, for one source or all. Every bucket of the window is present, empty ones with zeros.
 *
 * @example
 * const day = await healthSeries(pool, ledger, { windowMs: 86_400_000, bucketMs: 900_000, source: "stripe" });
 */
export async function healthSeries(
  db: Queryable,
  ledger: LedgerContext,
  options: { windowMs: number; bucketMs: number; source?: string },
): Promise<HealthSeries> {
  const { windowMs, bucketMs } = options;
  const source = options.source ?? null;
  const [deliveries, settles] = await Promise.all([
    db.query<{
      at: Date;
      accepted: number;
      duplicates: number;
      refused: number;
      unavailable: number;
      mismatches: number;
    }>({ ...deliveriesSql(ledger), values: [windowMs, bucketMs, source] }),
    db.query<{ at: Date; settled: number; p50: number; p99: number }>({
      ...settleSql(ledger),
      values: [windowMs, bucketMs, source, SETTLE_SAMPLE],
    }),
  ]);
  const byTime = new Map<number, HealthBucket>();
  const end = Math.floor(Date.now() / bucketMs) * bucketMs;
  for (let at = end - Math.ceil(windowMs / bucketMs - 1) * bucketMs; at <= end; at += bucketMs) {
    byTime.set(at, empty(new Date(at)));
  }
  for (const r of deliveries.rows) {
    const bucket = byTime.get(r.at.getTime()) ?? empty(r.at);
    byTime.set(r.at.getTime(), { ...bucket, ...r, at: r.at });
  }
  for (const r of settles.rows) {
    const bucket = byTime.get(r.at.getTime()) ?? empty(r.at);
    byTime.set(r.at.getTime(), { ...bucket, settled: r.settled, settleP50: r.p50, settleP99: r.p99 });
  }
  const buckets = [...byTime.values()].sort((a, b) => a.at.getTime() - b.at.getTime());
  return { bucketMs, buckets, settleSample: SETTLE_SAMPLE };
}

function empty(at: Date): HealthBucket {
  return {
    at,
    accepted: 0,
    duplicates: 0,
    refused: 0,
    unavailable: 0,
    mismatches: 0,
    settleP50: null,
    settleP99: null,
    settled: 0,
  };
}
