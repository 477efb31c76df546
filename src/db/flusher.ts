import type { Logger } from "../log.js";

/** Counts kept in memory by key and written to Postgres in one statement on an interval and at shutdown. */
export interface Flusher<V> {
  /** The pending entry for `key`, made by `create` when there is none. */
  entry(key: string, create: () => V): V;
  /**
   * How many batches have been taken for writing so far. An entry may be kept and counted into again while this
   * has not changed; once it has, ask `entry` again (the one kept may already be written).
   */
  readonly batches: number;
  /** Writes now; one write at a time, so a slow one is never overtaken and `close()` waits for it. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left; a failure then is logged (the counts are lost), never thrown. */
  close(): Promise<void>;
}

/**
 * Batches counts by key: the hot path only touches an in-memory entry; every `flushMs` (a timer that never keeps
 * the process alive) and at `close()` the pending entries go to `write` as one batch. A failed write puts its
 * batch back, `merge`d into whatever arrived meanwhile, so the next flush tries again; `what` names the counts in
 * the log.
 *
 * @example
 * const counts = countFlusher<{ n: number }>((rows) => db.query(...), (into, from) => { into.n += from.n; }, { log, what: "duplicate counts" });
 * counts.entry("stripe\0evt_1", () => ({ n: 0 })).n++;
 */
export function countFlusher<V>(
  write: (entries: readonly V[]) => Promise<unknown>,
  merge: (into: V, from: V) => void,
  options: { readonly flushMs?: number | undefined; readonly log: Logger; readonly what: string },
): Flusher<V> {
  const { log, what } = options;
  let pending = new Map<string, V>();
  let batches = 0;
  const writeBatch = async () => {
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    batches++;
    try {
      await write([...batch.values()]);
    } catch (error) {
      for (const [key, value] of batch) {
        const current = pending.get(key);
        if (current) merge(current, value);
        else pending.set(key, value);
      }
      throw error;
    }
  };
  let flushing: Promise<void> = Promise.resolve();
  const flush = () => {
    flushing = flushing.catch(() => {}).then(writeBatch);
    return flushing;
  };
  const timer = setInterval(() => {
    flush().catch((error: Error) =>
      log.warn({ err: error.message }, `${what} not written; retrying at the next flush`),
    );
  }, options.flushMs ?? 5000);
  timer.unref();
  return {
    get batches() {
      return batches;
    },
    entry(key, create) {
      let value = pending.get(key);
      if (value === undefined) {
        value = create();
        pending.set(key, value);
      }
      return value;
    },
    flush,
    async close() {
      clearInterval(timer);
      try {
        await flush();
      } catch (error) {
        log.error({ err: (error as Error).message }, `${what} lost at shutdown`);
      }
    },
  };
}
