import type { Logger } from "../log.js";
import { finishedWithin } from "../within.js";

/** What wakes the engine early: a LISTEN on the queue's channel. Polling keeps running without it. */
export interface EngineWaker {
  sleep(ms: number, since?: number): Promise<void>;
  mark(): number;
  wakeAll(): void;
  close(): Promise<void>;
}

/**
 * What the engine drives: `take` leases up to `limit` due items (their attempts counted and committed), and
 * `deliver` makes one item's call outside any transaction and records its end, fenced by that attempt. `deliver`
 * never throws: a failure to record is its own to log (the lease then runs out and the item is taken again).
 */
export interface EngineQueue<T> {
  take(limit: number): Promise<readonly T[]>;
  deliver(item: T, signal: AbortSignal): Promise<void>;
}

/** Options of {@link startDeliveryEngine}. */
export interface EngineOptions<T> {
  /** Names the engine in logs: "outbox". */
  readonly name: string;
  readonly queue: EngineQueue<T>;
  /** Calls in flight at once in this process. */
  readonly concurrency: number;
  /** How often an idle engine looks for due items without a wake-up (retries come due this way). */
  readonly pollIntervalMs: number;
  readonly waker: EngineWaker;
  readonly log: Logger;
}

/** A running delivery engine. */
export interface DeliveryEngine {
  /**
   * Stops taking items and waits for the calls in flight; after `graceMs` they are aborted (each `deliver` gives
   * its item back). Resolves once every call has ended, or 5 s after aborting should one ignore its signal.
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts the one loop that sends anything outward (docs/outbox.md, "How a message is sent"): lease → call → fenced
 * settle, with up to `concurrency` calls in flight. A slow call holds one slot and never blocks the others.
 *
 * @example
 * const engine = startDeliveryEngine({ name: "outbox", queue, concurrency: 16, pollIntervalMs: 1000, waker, log });
 * await engine.stop(10_000);
 */
export function startDeliveryEngine<T>(options: EngineOptions<T>): DeliveryEngine {
  const { queue, waker, log } = options;
  const abort = new AbortController();
  const running = new Set<Promise<void>>();
  let stopping = false;
  let slotFreed: (() => void) | undefined;

  const start = (item: T) => {
    const call = queue
      .deliver(item, abort.signal)
      .catch((error: Error) => log.error({ err: error.message, engine: options.name }, "delivery failed"))
      .finally(() => {
        running.delete(call);
        slotFreed?.();
      });
    running.add(call);
  };

  const loop = async () => {
    let failures = 0;
    while (!stopping) {
      const free = options.concurrency - running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          slotFreed = resolve;
        });
        slotFreed = undefined;
        continue;
      }
      // Marked before looking: a message committed while this take found nothing must not wait a poll.
      const mark = waker.mark();
      let taken: readonly T[];
      try {
        taken = await queue.take(free);
        failures = 0;
      } catch (error) {
        // The database is unreachable or restarting: nothing was leased; back off (up to 5 s) and look again.
        failures++;
        log.error(
          { err: (error as Error).message, engine: options.name },
          "could not take due items; retrying",
        );
        await waker.sleep(Math.min(5000, 100 * 2 ** failures));
        continue;
      }
      for (const item of taken) start(item);
      if (taken.length < free && !stopping) await waker.sleep(options.pollIntervalMs, mark);
    }
  };
  const looping = loop();

  return {
    async stop(graceMs = 10_000) {
      stopping = true;
      waker.wakeAll();
      slotFreed?.();
      await looping;
      const all = Promise.all(running);
      if (!(await finishedWithin(all, graceMs))) {
        abort.abort();
        const ended = await finishedWithin(all, 5000);
        log.warn({ engine: options.name, graceMs, ended }, "stopped with calls in flight; they were aborted");
      }
      await waker.close();
    },
  };
}

/**
 * A waker without LISTEN: sleeps end at their time or when `wakeAll` is called, for a queue whose writers run in
 * the same process (the alerts' evaluator wakes its sender).
 *
 * @example
 * const waker = pollingWaker();
 * const engine = startDeliveryEngine({ name: "alerts", queue, concurrency: 20, pollIntervalMs: 2000, waker, log });
 */
export function pollingWaker(): EngineWaker {
  const sleepers = new Set<() => void>();
  let wakeups = 0;
  const wakeAll = () => {
    wakeups++;
    for (const wake of sleepers) wake();
    sleepers.clear();
  };
  return {
    sleep(ms, since) {
      if (since !== undefined && since !== wakeups) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          sleepers.delete(done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        sleepers.add(done);
      });
    },
    mark: () => wakeups,
    wakeAll,
    async close() {
      wakeAll();
    },
  };
}

/**
 * The error of a message taken again after its attempts ran out: the last attempt's process was lost mid-call
 * (the take counted it before the call), so no answer was recorded.
 *
 * @example
 * if (m.attempts > retry.maxAttempts) return { kind: "dead", error: lostAttemptsError(m.attempts) };
 */
export const lostAttemptsError = (attempts: number): string =>
  `attempts exhausted: attempt ${attempts - 1} ended with no record (its process was lost mid-call)`;
