import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";

/**
 * Delivery statistics of one source over a window.
 *
 * @example
 * const [stripe]: readonly SourceStats[] = (await readDeliveryStats(pool, ledger, { windowMs })).sources;
 */
export interface SourceStats {
  readonly source: string;
  /** Every delivery that reached the ledger: unique events + duplicates + retries. */
  readonly deliveries: number;
  /** Events whose first delivery fell in the window. */
  readonly uniqueEvents: number;
  readonly duplicates: number;
  /**
   * Duplicates per 100 deliveries: without hookledger in front, the share of deliveries an endpoint that does not
   * deduplicate would have processed a second time.
   */
  readonly duplicateRate: number;
  /** Shadow mode: duplicates the app's handler ran for anyway; `enforce` would have skipped them. */
  readonly wouldSkip: number;
  /** Inline guard: deliveries that ran an event again after its earlier run failed or died. */
  readonly retries: number;
  /** Duplicates whose body differs from the first delivery's. */
  readonly bodyMismatches: number;
  /** Deliveries refused before the ledger (signature, malformed, method, size, encoding). */
  readonly refused: number;
  /**
   * Deliveries answered 503 (the ledger out of reach, a claim past its deadline, a service still starting); the
   * provider retries them. Not part of `deliveries`.
   */
  readonly unavailable: number;
}

/**
 * Statistics since a moment, per source.
 *
 * @example
 * const { since, sources }: DeliveryStats = await readDeliveryStats(pool, ledger, { windowMs: 86_400_000 });
 */
export interface DeliveryStats {
  /** The start of the window, rounded down to the minute the counts are kept in. */
  readonly since: Date;
  readonly sources: readonly SourceStats[];
}

const statsSql = statement(
  "stats-read",
  (s) => `with w as (select date_trunc('minute', now() - $1::bigint * interval '1 millisecond') as since)
select w.since, d.source,
  coalesce(sum(d.accepted), 0)::float8 as accepted, coalesce(sum(d.duplicates), 0)::float8 as duplicates,
  coalesce(sum(d.would_skip), 0)::float8 as would_skip, coalesce(sum(d.mismatches), 0)::float8 as mismatches,
  coalesce(sum(d.refused), 0)::float8 as refused, coalesce(sum(d.retried), 0)::float8 as retried,
  coalesce(sum(d.unavailable), 0)::float8 as unavailable
from w left join ${s}.delivery_stats d on d.minute >= w.since and ($2::text is null or d.source = $2::text)
group by w.since, d.source
order by d.source`,
);

interface Row {
  since: Date;
  source: string | null;
  accepted: number;
  duplicates: number;
  would_skip: number;
  mismatches: number;
  refused: number;
  retried: number;
  unavailable: number;
}

/**
 * Reads `delivery_stats` (written by `createStatsObserver`) over the last `windowMs`, per source, by the database's
 * clock.
 *
 * @example
 * const { sources } = await readDeliveryStats(pool, ledger, { windowMs: 24 * 3_600_000, source: "stripe" });
 */
export async function readDeliveryStats(
  db: Queryable,
  ledger: LedgerContext,
  options: { windowMs: number; source?: string },
): Promise<DeliveryStats> {
  const { rows } = await db.query<Row>({
    ...statsSql(ledger),
    values: [Math.round(options.windowMs), options.source ?? null],
  });
  const since = rows[0]?.since ?? new Date(Date.now() - options.windowMs);
  const sources = rows.flatMap((r): SourceStats[] => {
    if (r.source === null) return [];
    const deliveries = r.accepted + r.duplicates + r.retried;
    return [
      {
        source: r.source,
        deliveries,
        uniqueEvents: r.accepted,
        duplicates: r.duplicates,
        duplicateRate: deliveries === 0 ? 0 : (100 * r.duplicates) / deliveries,
        wouldSkip: r.would_skip,
        retries: r.retried,
        bodyMismatches: r.mismatches,
        refused: r.refused,
        unavailable: r.unavailable,
      },
    ];
  });
  return { since, sources };
}
