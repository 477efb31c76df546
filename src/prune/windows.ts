const DAY_MS = 86_400_000;

/**
 * How long after an event a provider can still bring it back (a retry, a redelivery or a replay through its API),
 * by provider: the shortest prune horizon that keeps a late arrival recognisable from its live row. Past it, the
 * tombstone still recognises it until the tombstone horizon. Sources (each provider's documentation):
 * - stripe 30 d: `GET /v1/events` lists the last 30 days (automatic retries end after 3 days).
 * - paddle 90 d: notifications are retained, and replayable, for 90 days (retries end after 3 days).
 * - awardee 30 d: its own brief prunes its seen-deliveries table after 30 days.
 * - github 7 d: redelivery of the past 3 days on github.com, 7 on GHES 3.x (the longer one).
 * - standard 30 d: senders retry for about 3 days, but recovery is sender-side (Svix `recover`, resend) with a
 *   sender-defined retention: 30 days, as Stripe's, until the sender says otherwise.
 * - shopify 7 d: 8 retries over 4 hours and no replay API; a week covers an outage noticed late.
 * - slack 1 d: 3 retries within about 5 minutes and no replay API.
 * - generic 90 d: nothing is known, so the longest of the known windows.
 *
 * @example
 * REPLAY_WINDOW_MS.stripe; // 2_592_000_000 (30 days)
 */
export const REPLAY_WINDOW_MS: Readonly<Record<string, number>> = {
  stripe: 30 * DAY_MS,
  paddle: 90 * DAY_MS,
  awardee: 30 * DAY_MS,
  github: 7 * DAY_MS,
  standard: 30 * DAY_MS,
  shopify: 7 * DAY_MS,
  slack: 1 * DAY_MS,
  generic: 90 * DAY_MS,
};

/** A source a prune runs over without a known provider (in the ledger, no longer configured): the longest window. */
export const UNKNOWN_WINDOW_MS = 90 * DAY_MS;

/**
 * A source to prune: its name and, when configured, its provider's name.
 *
 * @example
 * const source: PruneSource = { name: "stripe-eu", provider: "stripe" };
 */
export interface PruneSource {
  readonly name: string;
  readonly provider?: string | undefined;
}

/**
 * A source whose replay window is longer than the horizon asked for.
 *
 * @example
 * const refusal: HorizonRefusal = { source: "stripe", provider: "stripe", windowMs: 30 * 86_400_000 };
 */
export interface HorizonRefusal {
  readonly source: string;
  readonly provider: string | undefined;
  readonly windowMs: number;
}

/**
 * The replay window of a source's provider ({@link REPLAY_WINDOW_MS}; {@link UNKNOWN_WINDOW_MS} without one).
 *
 * @example
 * replayWindowMs({ name: "shop", provider: "shopify" }); // 604_800_000
 */
export function replayWindowMs(source: PruneSource): number {
  return (source.provider !== undefined && REPLAY_WINDOW_MS[source.provider]) || UNKNOWN_WINDOW_MS;
}

/**
 * The sources a prune at `olderThanMs` must refuse (unless forced): those whose replay window is longer.
 *
 * @example
 * horizonRefusals([{ name: "paddle", provider: "paddle" }], 30 * 86_400_000); // [{ source: "paddle", … 90 days }]
 */
export function horizonRefusals(sources: readonly PruneSource[], olderThanMs: number): HorizonRefusal[] {
  return sources
    .filter((source) => replayWindowMs(source) > olderThanMs)
    .map((source) => ({ source: source.name, provider: source.provider, windowMs: replayWindowMs(source) }));
}

/**
 * The default tombstone horizon: the larger of 365 days and twice the prune horizon, so a key is remembered for at
 * least a year and always well past its row.
 *
 * @example
 * defaultTombstoneHorizonMs(90 * 86_400_000); // 365 days
 */
export function defaultTombstoneHorizonMs(olderThanMs: number): number {
  return Math.max(365 * DAY_MS, 2 * olderThanMs);
}
