import type { Logger } from "../log.js";

/** What the log says about one duplicate delivery. */
export interface DuplicateFields {
  readonly source: string;
  readonly eventId: string;
  readonly type: string;
  /** Answered from the confirmed-duplicate cache, without the database. */
  readonly shortCircuit: boolean;
}

/**
 * The log of duplicate deliveries (docs/architecture.md, "Duplicates are logged at debug, summed up at info").
 *
 * @example
 * const duplicates: DuplicateLog = duplicateLog(log);
 * duplicates.duplicate({ source: "stripe", eventId: "evt_1", type: "invoice.paid", shortCircuit: true });
 */
export interface DuplicateLog {
  /** Logs one duplicate at debug and counts it in its source's next summary. */
  duplicate(fields: DuplicateFields): void;
}

/**
 * Logs each duplicate delivery at debug (`delivery received`, `result: "duplicate"`) and, at info, one
 * `duplicate deliveries answered` line per source and window that had any, with how many and how many of them the
 * cache answered. A duplicate storm then costs one line a minute instead of one per delivery, while every accepted
 * event keeps its own info line. The window's timer starts with its first duplicate and never keeps the process
 * alive, so an idle receiver holds no timer; a summary still pending when the process exits is lost (the metrics
 * and `hookledger stats` count every duplicate).
 *
 * @example
 * const duplicates = duplicateLog(log, 60_000);
 */
export function duplicateLog(log: Logger, windowMs = 60_000): DuplicateLog {
  // source → counts of the current window; undefined while no window is open
  let window: Map<string, { duplicates: number; fromCache: number }> | undefined;
  const summarise = () => {
    const counts = window;
    window = undefined;
    if (!counts) return;
    for (const [source, c] of counts) {
      log.info(
        { source, duplicates: c.duplicates, fromCache: c.fromCache, windowSeconds: windowMs / 1000 },
        "duplicate deliveries answered",
      );
    }
  };
  return {
    duplicate(fields) {
      log.debug(
        {
          source: fields.source,
          eventId: fields.eventId,
          type: fields.type,
          result: "duplicate",
          shortCircuit: fields.shortCircuit,
        },
        "delivery received",
      );
      if (!window) {
        window = new Map();
        setTimeout(summarise, windowMs).unref();
      }
      let counts = window.get(fields.source);
      if (!counts) {
        counts = { duplicates: 0, fromCache: 0 };
        window.set(fields.source, counts);
      }
      counts.duplicates++;
      if (fields.shortCircuit) counts.fromCache++;
    },
  };
}
