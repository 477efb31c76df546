import { countFlusher } from "../db/flusher.js";
import type { DeliveryReport, DeliveryResult, EdgeObserver } from "../edge/observer.js";
import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";
import type { Logger } from "../log.js";

/**
 * The counters kept per source and minute (the columns of `delivery_stats`).
 *
 * @example
 * const counts: DeliveryCounts = { accepted: 1, duplicates: 0, wouldSkip: 0, mismatches: 0, refused: 0, retried: 0, unavailable: 0 };
 */
export interface DeliveryCounts {
  /** New events: the first delivery of each. */
  accepted: number;
  /** Deliveries of an event already in the ledger (including shadow-mode would-skips). */
  duplicates: number;
  /** Shadow mode: duplicates the app's handler ran for anyway. */
  wouldSkip: number;
  /** Duplicates whose body differs from the first delivery's. */
  mismatches: number;
  /** Refused before the ledger: 401, 400, 405, 413, 415. */
  refused: number;
  /** Inline guard: deliveries that ran an event again after its earlier run failed or died. */
  retried: number;
  /** Answered 503 (the ledger out of reach, a claim past its deadline, a service still starting): retried later. */
  unavailable: number;
}

/**
 * Options of {@link createStatsObserver}.
 *
 * @example
 * const options: StatsObserverOptions = { db: pool, ledger, log, flushMs: 10_000 };
 */
export interface StatsObserverOptions {
  /** Where the counts are written (any pool; one statement per flush). */
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly log: Logger;
  /**
   * How often the counts are written. A crash loses at most this much of them.
   * @defaultValue 5000
   */
  readonly flushMs?: number;
  /** The clock that buckets deliveries into minutes. @defaultValue Date.now */
  readonly now?: () => number;
}

/**
 * An {@link EdgeObserver} that keeps delivery statistics in Postgres for `hookledger stats`.
 *
 * @example
 * const stats: StatsObserver = createStatsObserver({ db: pool, ledger, log });
 * await stats.close(); // at shutdown: writes what is left
 */
export interface StatsObserver extends EdgeObserver {
  /** Writes the counts gathered so far; a failed write keeps them for the next flush. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

const REFUSED: ReadonlySet<DeliveryResult> = new Set([
  "unauthorized",
  "rate_limited",
  "malformed",
  "method_not_allowed",
  "payload_too_large",
  "unsupported_encoding",
]);

const COLUMNS = [
  "accepted",
  "duplicates",
  "wouldSkip",
  "mismatches",
  "refused",
  "retried",
  "unavailable",
] as const;

const upsertSql = statement(
  "stats-upsert",
  (s) => `insert into ${s}.delivery_stats as d
  (source, minute, accepted, duplicates, would_skip, mismatches, refused, retried, unavailable)
select * from unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[],
  $7::bigint[], $8::bigint[], $9::bigint[])
on conflict (source, minute) do update set
  accepted = d.accepted + excluded.accepted,
  duplicates = d.duplicates + excluded.duplicates,
  would_skip = d.would_skip + excluded.would_skip,
  mismatches = d.mismatches + excluded.mismatches,
  refused = d.refused + excluded.refused,
  retried = d.retried + excluded.retried,
  unavailable = d.unavailable + excluded.unavailable`,
);

/**
 * Counts deliveries in memory per source and minute and adds them to `delivery_stats` with one upsert every
 * `flushMs` and on `close()`, so receivers on many hosts add up and the numbers outlive restarts. The hot path
 * only increments a counter. Counts not yet written when the process dies (at most `flushMs` of them) are lost:
 * statistics, not the ledger. 503s are counted as `unavailable` (kept in memory while the database is out of
 * reach, written once it is back); unknown sources (404) and handshakes are not counted.
 *
 * @example
 * const stats = createStatsObserver({ db: pool, ledger, log });
 * const receiver = createReceiver({ sources, db: pool, ledger, log, observer: stats });
 * process.on("SIGTERM", () => stats.close());
 */
export function createStatsObserver(options: StatsObserverOptions): StatsObserver {
  const { db, ledger, log } = options;
  const now = options.now ?? Date.now;
  const pending = countFlusher<{ source: string; minute: number; counts: DeliveryCounts }>(
    (rows) =>
      db.query({
        ...upsertSql(ledger),
        values: [
          rows.map((r) => r.source),
          rows.map((r) => new Date(r.minute)),
          ...COLUMNS.map((c) => rows.map((r) => r.counts[c])),
        ],
      }),
    // Counts put back after a failed write are added to whatever arrived meanwhile.
    (into, from) => {
      for (const c of COLUMNS) into.counts[c] += from.counts[c];
    },
    { flushMs: options.flushMs, log, what: "delivery statistics" },
  );

  // source → the bucket counted into last: most deliveries land in the same one, found without building its key.
  const recent = new Map<string, { minute: number; batches: number; counts: DeliveryCounts }>();
  const bucket = (source: string): DeliveryCounts => {
    const minute = Math.floor(now() / 60_000) * 60_000;
    const last = recent.get(source);
    if (last && last.minute === minute && last.batches === pending.batches) return last.counts;
    const { counts } = pending.entry(`${minute} ${source}`, () => ({ source, minute, counts: zero() }));
    // Sources here are configured ones (unknown sources are not counted), so the map stays that small.
    recent.set(source, { minute, batches: pending.batches, counts });
    return counts;
  };

  return {
    delivery(report: DeliveryReport) {
      if (report.result === "unknown_source") return;
      if (report.result === "unavailable") {
        bucket(report.source).unavailable++;
        return;
      }
      const isRefused = REFUSED.has(report.result);
      if (!isRefused && report.result !== "accepted" && report.result !== "duplicate") return;
      const counts = bucket(report.source);
      if (isRefused) counts.refused++;
      else if (report.result === "accepted") {
        if (report.retry) counts.retried++;
        else counts.accepted++;
      } else {
        counts.duplicates++;
        if (report.wouldSkip) counts.wouldSkip++;
        if (report.bodyMismatch) counts.mismatches++;
      }
    },
    flush: pending.flush,
    close: pending.close,
  };
}

function zero(): DeliveryCounts {
  return { accepted: 0, duplicates: 0, wouldSkip: 0, mismatches: 0, refused: 0, retried: 0, unavailable: 0 };
}
