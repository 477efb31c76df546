/**
 * How long a count holds the next slot's turn at most. A count takes a few milliseconds; one that has not come back
 * after this (a connection that stopped answering, a table lock held by a migration) lets the next slot count
 * anyway, so one stuck connection never stops the whole worker: without a statement timeout on the worker's
 * sessions, a half-open socket would otherwise hold every slot until the operating system's keepalive gives up.
 */
export const COUNT_TURN_MS = 2000;

/**
 * The smallest count that waits for its turn. A count of a few events passes few rows another count holds, while a
 * slot that waits for its turn before each one is held to one count per round trip: at ten slots, batches of one
 * event ran 25 % slower in turn (406-432 against 314-330 events/s), batches of five and sixteen no differently,
 * batches of fifty 11 % faster (docs/benchmarks.md, "Why the slots count in turn").
 */
export const TURN_FROM_EVENTS = 8;

/**
 * The order in which one worker's slots count their batches (pick.ts, `countAttempts`): one at a time, each in
 * turn. Counts that run side by side walk the same head of `events_due` and pass each other's locked rows (SKIP
 * LOCKED visits them all), so each takes longer: at ten slots, in turn, the count's time per event fell from 123 to
 * 88 µs and the worker went 11 % faster (medians of eight pairs, docs/benchmarks.md, "Why the slots count in turn").
 *
 * @example
 * const turns = countTurns();
 * const counted = await turns.take(50, () => countAttempts(client, ledger, policy, 50, floor));
 */
export interface CountTurns {
  /**
   * Runs `count` (of at most `events` events) once the previous turn's count came back, or had run for
   * {@link COUNT_TURN_MS}; a count of fewer than {@link TURN_FROM_EVENTS} events at once, taking no turn.
   */
  take<T>(events: number, count: () => Promise<T>): Promise<T>;
}

/**
 * Makes the {@link CountTurns} of one worker; turns are taken in the order asked for.
 *
 * @example
 * const turns = countTurns();
 */
export function countTurns(): CountTurns {
  let previous: Promise<void> = Promise.resolve();
  return {
    async take(events, count) {
      if (events < TURN_FROM_EVENTS) return count();
      const before = previous;
      let pass = () => {};
      previous = new Promise<void>((resolve) => {
        pass = resolve;
      });
      await before;
      const timer = setTimeout(pass, COUNT_TURN_MS);
      timer.unref();
      try {
        return await count();
      } finally {
        clearTimeout(timer);
        pass();
      }
    },
  };
}
