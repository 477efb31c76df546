import type { Logger } from "../log.js";

/** Counts kept in memory and written to Postgres on an interval and at shutdown. */
export interface Flusher {
  /** Writes now; one write at a time, so a slow one is never overtaken and `close()` waits for it. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left; a failure then is logged (the counts are lost), never thrown. */
  close(): Promise<void>;
}

/**
 * Runs `write` every `flushMs` (the timer never keeps the process alive) and at `close()`. `write` puts its batch
 * back when it fails, so the next flush tries again; `what` names the counts in the log.
 *
 * @example
 * const flusher = periodicFlusher(write, { flushMs: 5000, log, what: "delivery statistics" });
 */
export function periodicFlusher(
  write: () => Promise<void>,
  options: { readonly flushMs?: number | undefined; readonly log: Logger; readonly what: string },
): Flusher {
  const { log, what } = options;
  let flushing: Promise<void> = Promise.resolve();
  const flush = () => {
    flushing = flushing.catch(() => {}).then(write);
    return flushing;
  };
  const timer = setInterval(() => {
    flush().catch((error: Error) =>
      log.warn({ err: error.message }, `${what} not written; retrying at the next flush`),
    );
  }, options.flushMs ?? 5000);
  timer.unref();
  return {
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
