import { keptHeaders } from "../src/edge/headers.js";
import { signDelivery } from "../src/testing/sign.js";
import type { ClaimInput } from "../src/ledger/claim.js";
import { stripeProvider } from "../src/providers/stripe.js";

/** One pre-built delivery: the bytes the HTTP phases POST and the claim the baseline phases issue. */
export interface BenchEvent {
  readonly id: string;
  readonly body: string;
  /** The claim the edge would make for this body, parsed before any timing starts. */
  readonly claim: ClaimInput;
}

/** Headers every bench delivery carries besides its signature; the edge keeps both on the ledger row. */
export const BASE_HEADERS = { "content-type": "application/json", "user-agent": "hookledger-bench" } as const;

/**
 * A Stripe `customer.subscription.updated` event of exactly `bytes` bytes (the metadata field pads it).
 *
 * @example
 * stripeBody("evt_bench_1", 2048).length; // 2048
 */
export function stripeBody(id: string, bytes: number): string {
  const event = (pad: string) =>
    JSON.stringify({
      id,
      object: "event",
      api_version: "2024-06-20",
      type: "customer.subscription.updated",
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      pending_webhooks: 1,
      data: {
        object: {
          id: `sub_${id}`,
          object: "subscription",
          customer: `cus_${id}`,
          status: "active",
          items: { object: "list", data: [{ id: `si_${id}`, price: { id: "price_pro", currency: "eur" } }] },
          metadata: { pad },
        },
      },
    });
  const base = Buffer.byteLength(event(""));
  if (base > bytes) throw new Error(`a bench event needs at least ${base} bytes, got ${bytes}`);
  return event("x".repeat(bytes - base));
}

/**
 * Builds `count` events with ids `{prefix}_{i}` and parses each through the Stripe provider, as the edge does, so
 * the baseline's claim carries the same SQL and the same parameters as the HTTP path's claim.
 *
 * @example
 * const events = buildEvents("evt_bench_u", 20_000, 2048, "stripe", secret);
 */
export function buildEvents(
  prefix: string,
  count: number,
  bytes: number,
  source: string,
  secret: string,
): BenchEvent[] {
  const provider = stripeProvider();
  return Array.from({ length: count }, (_, i) => {
    const id = `${prefix}_${i}`;
    const body = stripeBody(id, bytes);
    const now = Date.now();
    const headers = new Headers({
      ...BASE_HEADERS,
      "stripe-signature": stripeSignature(body, secret, Math.floor(now / 1000)),
    });
    const bodyBytes = Buffer.from(body);
    const verified = provider.verify({ body: bodyBytes, headers, secrets: [secret], now });
    if (!verified.ok || !("event" in verified))
      throw new Error(`bench event ${id} does not verify as an event`);
    return {
      id,
      body,
      claim: {
        source,
        event: verified.event,
        body: bodyBytes,
        headers: keptHeaders(headers),
        secretIndex: verified.secretIndex,
        arrivedVia: "delivery",
      },
    };
  });
}

/**
 * Signs every body with one fresh timestamp, just before a phase, so all of them stay inside Stripe's 300 s
 * window however long the earlier phases took.
 *
 * @example
 * const signatures = signAll(events, secret);
 */
export function signAll(events: readonly BenchEvent[], secret: string): string[] {
  const t = Math.floor(Date.now() / 1000);
  return events.map((e) => stripeSignature(e.body, secret, t));
}

function stripeSignature(body: string, secret: string, timestamp: number): string {
  return signDelivery({ provider: "stripe", secret, body, timestamp }).headers["stripe-signature"] ?? "";
}
