/** How the edge answered one delivery. */
export type DeliveryResult =
  | "accepted"
  | "duplicate"
  | "handshake"
  | "unauthorized"
  /** A failed verification from an address over its limit: 429 instead of 401. */
  | "rate_limited"
  | "malformed"
  | "unknown_source"
  | "method_not_allowed"
  | "payload_too_large"
  | "unsupported_encoding"
  | "body_already_parsed"
  | "unavailable";

/** What the edge knows about one answered delivery, for metrics and statistics. */
export interface DeliveryReport {
  readonly source: string;
  readonly result: DeliveryResult;
  /** Why a delivery was refused (a provider's failure reason), when it was. */
  readonly reason?: string;
  /** Seconds the claim took, when one ran. */
  readonly claimSeconds?: number;
  /** A duplicate whose body differs from the first delivery's (docs/architecture.md §3: an alarm, not a re-serialisation). */
  readonly bodyMismatch?: boolean;
  /** A duplicate answered from the confirmed-duplicate cache, without the database. */
  readonly shortCircuit?: boolean;
  /** The event's dedupe key, on a duplicate answered from the cache (the ledger's duplicate count is kept from it). */
  readonly eventId?: string;
  /** Inline guard, shadow mode: a duplicate the app's handler ran for anyway (enforce mode would have skipped it). */
  readonly wouldSkip?: boolean;
  /**
   * Inline guard: an `accepted` delivery that took over an event whose earlier inline handler failed or whose
   * process died (a provider's retry, not a new event).
   */
  readonly retry?: boolean;
}

/**
 * Hears every delivery the edge answers. Metrics and delivery statistics implement it; it must not throw or block.
 *
 * @example
 * const observer: EdgeObserver = { delivery: (r) => counter.inc({ source: r.source, result: r.result }) };
 */
export interface EdgeObserver {
  delivery(report: DeliveryReport): void;
}

/**
 * Event ids known to be committed in the ledger, each with the sha256 of the body the ledger holds: a duplicate
 * found here with the same body is answered without the database. Only ids whose claim has committed may be added,
 * so a hit is always a true duplicate; a miss just means "ask Postgres". A hit whose body differs goes to Postgres,
 * which records the mismatch (docs/architecture.md §3).
 *
 * @example
 * const seen: SeenCache = memorySeenCache({ max: 100_000 });
 * await seen.get("stripe", "evt_1"); // "9f86d0…" (hex sha256 of the stored body) or undefined
 * seen.peek?.("stripe", "evt_1"); // the same, when the cache can answer at once
 */
export interface SeenCache {
  /** The hex sha256 of the stored body of a committed event; `undefined` when the id is not known here. */
  get(source: string, dedupeKey: string): Promise<string | undefined>;
  /**
   * Optional: what a cache in this process's memory knows now, synchronously; `undefined` sends the receiver on to
   * `get`. A cached duplicate then costs no promise. Caches that need I/O leave it out.
   */
  peek?(source: string, dedupeKey: string): string | undefined;
  /**
   * Records a committed event id with the hex sha256 of the body the ledger holds for it; failures are the
   * cache's own business (it never changes an answer).
   */
  add(source: string, dedupeKey: string, bodySha256: string): void;
}

/** Fans one report out to several observers. */
export function observers(...list: readonly (EdgeObserver | undefined)[]): EdgeObserver {
  const present = list.filter((o): o is EdgeObserver => o !== undefined);
  return {
    delivery(report) {
      for (const o of present) o.delivery(report);
    },
  };
}
