import type Stripe from "stripe";
import { importOptional } from "../optional.js";

/** Stripe keeps events for 30 days (docs.stripe.com/api/events/list). */
export const STRIPE_RETENTION_MS = 30 * 86_400_000;

/** How to reach Stripe's API. */
export interface StripeApiOptions {
  /** A secret key (`sk_…`) or a restricted key (`rk_…`) that can read Events. Never logged. */
  readonly apiKey: string;
  /** The variable the key came from, named in errors. @defaultValue "STRIPE_API_KEY" */
  readonly apiKeyEnv?: string;
  /**
   * Another API base, e.g. a local fake in tests (`http://127.0.0.1:12111`).
   * @defaultValue "https://api.stripe.com"
   */
  readonly apiBase?: string;
  /** Retries of one request (connection errors, 5xx, 429) with exponential backoff. @defaultValue 3 */
  readonly maxRetries?: number;
  /** First backoff of a rate-limited (429) request, doubled each retry. @defaultValue 500 */
  readonly rateLimitDelayMs?: number;
}

/** What to list. */
export interface StripeEventQuery {
  readonly since: Date;
  readonly until: Date;
  /** Event types (`*` wildcards allowed); at most 20. */
  readonly types?: readonly string[];
  /** Only events Stripe has not yet delivered to every endpoint (`delivery_success=false`). */
  readonly undeliveredOnly?: boolean;
}

/**
 * Clamps a window to Stripe's 30-day retention.
 *
 * @example
 * stripeWindow(new Date(0), new Date(), Date.now()); // { since: now - 30 d, until: now, clamped: true }
 */
export function stripeWindow(since: Date, until: Date, now: number) {
  const edge = new Date(Math.ceil((now - STRIPE_RETENTION_MS) / 1000) * 1000);
  return since < edge ? { since: edge, until, clamped: true } : { since, until, clamped: false };
}

/** One event as the API renders it (the SDK's `Stripe.Event`, kept out of the public types). */
export type StripeEventJson = { readonly id: string } & Record<string, unknown>;

type StripeModule = typeof import("stripe");

// Loaded on first use: `import "hookledger"` never loads the SDK, and a user who never replays need not install it.
function loadStripe(): Promise<StripeModule> {
  return importOptional("stripe", () => import("stripe"), { feature: "replay stripe" });
}

function stripeClient(sdk: StripeModule, options: StripeApiOptions): Stripe {
  const base = options.apiBase ? new URL(options.apiBase) : undefined;
  return new sdk.default(options.apiKey, {
    maxNetworkRetries: options.maxRetries ?? 3,
    telemetry: false,
    appInfo: { name: "hookledger" },
    ...(base && {
      host: base.hostname,
      port: base.port || (base.protocol === "http:" ? "80" : "443"),
      protocol: base.protocol === "http:" ? "http" : "https",
    }),
  });
}

/**
 * Lists the window's events through the official SDK's auto-pagination and returns them oldest first (the API lists
 * newest first). Throws an `Error` whose message names the cause and the fix (401, 403, 429 or 5xx after the
 * retries), or a `MissingPackageError` when the `stripe` package is not installed.
 *
 * @example
 * const events = await listStripeEvents({ apiKey: process.env.STRIPE_API_KEY! }, { since, until }, (n) => bar.update(n));
 */
export async function listStripeEvents(
  options: StripeApiOptions,
  query: StripeEventQuery,
  onFetched: (count: number) => void = () => {},
): Promise<StripeEventJson[]> {
  const sdk = await loadStripe();
  const { errors } = sdk.default;
  const stripe = stripeClient(sdk, options);
  const types = query.types ?? [];
  const params: Stripe.EventListParams = {
    created: { gte: Math.floor(query.since.getTime() / 1000), lte: Math.floor(query.until.getTime() / 1000) },
    limit: 100,
    ...(types.length === 1 && { type: types[0] }),
    ...(types.length > 1 && { types: [...types] }),
    ...(query.undeliveredOnly && { delivery_success: false }),
  };
  const maxRetries = options.maxRetries ?? 3;
  const events: Stripe.Event[] = [];
  let retries = 0;
  for (;;) {
    const last = events.at(-1);
    try {
      // Resumes after the last event kept, so a retried page neither repeats nor skips events.
      for await (const event of stripe.events.list(last ? { ...params, starting_after: last.id } : params)) {
        events.push(event);
        retries = 0;
        onFetched(events.length);
      }
      return events.reverse() as unknown as StripeEventJson[];
    } catch (error) {
      // stripe-node retries a 429 only when Stripe sends `Stripe-Should-Retry: true` (lock timeouts); a plain rate
      // limit is retried here with the same kind of backoff.
      if (!(error instanceof errors.StripeRateLimitError) || retries >= maxRetries) {
        throw new Error(stripeErrorMessage(errors, error, options), { cause: error });
      }
      retries++;
      const delay = (options.rateLimitDelayMs ?? 500) * 2 ** (retries - 1);
      await new Promise((r) => setTimeout(r, delay * (0.5 + Math.random() / 2)));
    }
  }
}

function stripeErrorMessage(errors: typeof Stripe.errors, error: unknown, options: StripeApiOptions): string {
  const keyEnv = options.apiKeyEnv ?? "STRIPE_API_KEY";
  const retries = options.maxRetries ?? 3;
  if (error instanceof errors.StripeAuthenticationError) {
    return `Stripe refused the API key in ${keyEnv} (401); set ${keyEnv} to a secret key (sk_live_…/sk_test_…) or a restricted key with read access to Events, of the account that sends this source's webhooks`;
  }
  if (error instanceof errors.StripePermissionError) {
    return `the API key in ${keyEnv} may not read Events (403); give the restricted key "Events: read" in the Stripe dashboard`;
  }
  if (error instanceof errors.StripeRateLimitError) {
    return `Stripe kept rate-limiting the events list (429) after ${retries} retries; wait a minute and run again, or narrow --since/--until/--type`;
  }
  if (error instanceof errors.StripeConnectionError) {
    return `could not reach Stripe after ${retries} retries (${error.message}); check the network and run again`;
  }
  if (error instanceof errors.StripeError && (error.statusCode ?? 0) >= 500) {
    return `Stripe answered ${error.statusCode} after ${retries} retries; nothing was written: run again later (status.stripe.com)`;
  }
  if (error instanceof errors.StripeError) {
    return `Stripe refused the events list (${error.statusCode ?? "no status"}): ${error.message}`;
  }
  return `listing Stripe events failed: ${(error as Error).message}`;
}
