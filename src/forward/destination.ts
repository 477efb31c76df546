import { createHmac } from "node:crypto";
import type { BreakerPolicy } from "../ledger/forward-take.js";
import type { AddressRules } from "../outbound/address.js";
import type { RetryPolicy } from "../worker/backoff.js";

/** A forward whose every value is checked: what the worker's forward engine sends with. */
export interface ResolvedForward {
  /** The source's provider, sent in `hookledger-provider`. */
  readonly provider: string;
  readonly url: URL;
  /** The signing keys, decoded, in the configured order. */
  readonly keys: readonly Buffer[];
  readonly ordering: "entity" | "none";
  readonly timeoutMs: number;
  readonly rules: AddressRules;
  readonly retry: RetryPolicy;
  readonly breaker: BreakerPolicy;
}

/** The default retry policy of a forward: 15 attempts, 5 s doubling up to 1 h (about 5 hours to dead). */
export const defaultForwardRetry: RetryPolicy = { maxAttempts: 15, baseDelayMs: 5000, maxDelayMs: 3_600_000 };

/**
 * The breaker's default: 10 failed attempts in a row (across a destination's events) pause it for 30 s, doubling
 * with each further failure up to 10 minutes; a success closes it.
 */
export const defaultBreaker: BreakerPolicy = { threshold: 10, pauseMs: 30_000, maxPauseMs: 600_000 };

/**
 * The Standard Webhooks headers of one delivery: `webhook-signature` holds one `v1,` signature per key, each an
 * HMAC-SHA256 over `{webhook-id}.{webhook-timestamp}.{body}`, the body as the exact bytes sent. The timestamp is the
 * attempt's, so a receiver's tolerance window holds for a retry hours later.
 *
 * @example
 * const headers = standardHeaders(keys, "hl_abc", Buffer.from("{}"), new Date());
 */
export function standardHeaders(
  keys: readonly Buffer[],
  id: string,
  body: Uint8Array,
  now: Date,
): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signatures = keys.map((key) =>
    createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64"),
  );
  return {
    "webhook-id": id,
    "webhook-timestamp": timestamp,
    "webhook-signature": signatures.map((s) => `v1,${s}`).join(" "),
  };
}
