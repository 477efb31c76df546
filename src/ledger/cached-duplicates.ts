import type { EdgeObserver } from "../edge/observer.js";
import { countFlusher } from "../db/flusher.js";
import type { Logger } from "../log.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";

/**
 * Options of {@link createDuplicateCounter}.
 *
 * @example
 * const options: DuplicateCounterOptions = { db: adminPool, ledger, log, flushMs: 5000 };
 */
export interface DuplicateCounterOptions {
  /** Where the counts are written (the service uses its admin pool, never the claims' pool). */
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly log: Logger;
  /** @defaultValue 5000 */
  readonly flushMs?: number;
}

/**
 * An {@link EdgeObserver} that writes the duplicates the confirmed-duplicate cache answered into the ledger's
 * `duplicates` counts, batched.
 *
 * @example
 * const counter: DuplicateCounter = createDuplicateCounter({ db, ledger, log });
 * await counter.close(); // at shutdown: writes what is left
 */
export interface DuplicateCounter extends EdgeObserver {
  /** Writes the counts gathered so far; a failed write keeps them for the next flush. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

// Only events still in the ledger are counted: a row pruned meanwhile took its duplicates row with it. Rows are
// locked in (source, dedupe_key) order, as the batched claim's count does, so the two never deadlock.
const addSql = statement(
  "cached-duplicates",
  (s) => `insert into ${s}.duplicates as d (source, dedupe_key, count)
select u.source, u.dedupe_key, u.n from unnest($1::text[], $2::text[], $3::bigint[]) as u(source, dedupe_key, n)
  join ${s}.events e on e.source = u.source and e.dedupe_key = u.dedupe_key
order by u.source, u.dedupe_key
on conflict (source, dedupe_key) do update set count = d.count + excluded.count, last_seen_at = now()`,
);

/**
 * Counts duplicates answered from the cache (reports with `shortCircuit` and an `eventId`) in memory and adds them
 * to `duplicates.count` with one statement every `flushMs` and on `close()`: the cached path stays free of
 * database round trips, and `hookledger events show` still sees every duplicate delivery. Counts not yet written
 * when the process dies (at most `flushMs` of them) are lost, like the delivery statistics; `first_seen_at` and
 * `last_seen_at` are the write's time, not the delivery's. A mismatching body never arrives here: the receiver
 * sends it to Postgres, which counts it in the claim.
 *
 * @example
 * const counter = createDuplicateCounter({ db: adminPool, ledger, log });
 * const receiver = createReceiver({ ...options, seen: memorySeenCache(), observer: counter });
 */
export function createDuplicateCounter(options: DuplicateCounterOptions): DuplicateCounter {
  const { db, ledger, log } = options;
  // `${source}\0${dedupeKey}` → deliveries not yet written
  const counts = countFlusher<{ source: string; dedupeKey: string; n: number }>(
    (rows) =>
      db.query({
        ...addSql(ledger),
        values: [rows.map((r) => r.source), rows.map((r) => r.dedupeKey), rows.map((r) => r.n)],
      }),
    (into, from) => {
      into.n += from.n;
    },
    { flushMs: options.flushMs, log, what: "cached duplicate counts" },
  );

  return {
    delivery(report) {
      if (report.result !== "duplicate" || !report.shortCircuit || report.eventId === undefined) return;
      // Source names hold no NUL (see memorySeenCache), so the map key is unambiguous.
      const { source, eventId: dedupeKey } = report;
      counts.entry(`${source}\0${dedupeKey}`, () => ({ source, dedupeKey, n: 0 })).n++;
    },
    flush: counts.flush,
    close: counts.close,
  };
}
