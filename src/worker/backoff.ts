/** Retry policy of the worker. */
export interface RetryPolicy {
  /**
   * Attempts before an event is dead.
   * @defaultValue 10
   */
  readonly maxAttempts: number;
  /**
   * Delay after the first failure; it doubles with each further one.
   * @defaultValue 1000
   */
  readonly baseDelayMs: number;
  /**
   * Upper bound of a delay.
   * @defaultValue 3_600_000 (one hour)
   */
  readonly maxDelayMs: number;
}

/** The default retry policy: 10 attempts, 1 s doubling up to 1 h (about 8.5 minutes to dead, in all). */
export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 3_600_000 };

/**
 * Exponential backoff with "equal jitter": half the delay is fixed, half random, so retries of events that failed
 * together spread out but never come back sooner than half the nominal delay.
 *
 * @param attempt the number of the attempt that just failed (1 for the first).
 * @example
 * retryDelay(defaultRetryPolicy, 3); // between 2000 and 4000
 */
export function retryDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const nominal = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return nominal / 2 + (nominal / 2) * random();
}

const RETRY_AFTER_CAP_MS = 3_600_000;

/**
 * The delay before the attempt after `attempt`: the backoff, or a destination's `Retry-After` when that is longer,
 * up to an hour (a server asking for a day would otherwise park the message past every alert).
 *
 * @example
 * delayAfter(policy, 2, 120_000); // at least two minutes
 */
export function delayAfter(policy: RetryPolicy, attempt: number, retryAfter?: number): number {
  const backoff = retryDelay(policy, attempt);
  return retryAfter === undefined ? backoff : Math.max(backoff, Math.min(RETRY_AFTER_CAP_MS, retryAfter));
}
