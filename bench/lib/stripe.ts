// Signed Stripe deliveries for every contender: the same 2 KB bodies, signed with hookledger's public test signer.
import { signDelivery } from "hookledger/testing";

/** What one Stripe body says; everything else about it is fixed, so a body rebuilt from the same fields is byte-equal. */
export interface StripeFields {
  readonly id: string;
  /** `data.object.id`: the subscription the event is about (the entity of the version guard). */
  readonly subscription: string;
  /** The event's `created` (unix seconds): Stripe's entity version. */
  readonly created: number;
  readonly status: string;
}

/**
 * A `customer.subscription.updated` event of exactly `bytes` bytes (the metadata field pads it). Deterministic: the
 * duplicate storm rebuilds the unique phase's bodies byte for byte in another process.
 *
 * @example
 * stripeBody({ id: "evt_1", subscription: "sub_1", created: 1767225600, status: "active" }, 2048).length; // 2048
 */
export function stripeBody(fields: StripeFields, bytes: number): string {
  const event = (pad: string) =>
    JSON.stringify({
      id: fields.id,
      object: "event",
      api_version: "2024-06-20",
      type: "customer.subscription.updated",
      created: fields.created,
      livemode: false,
      pending_webhooks: 1,
      data: {
        object: {
          id: fields.subscription,
          object: "subscription",
          customer: `cus_${fields.subscription}`,
          status: fields.status,
          items: { object: "list", data: [{ id: `si_${fields.subscription}`, price: { id: "price_pro" } }] },
          metadata: { pad },
        },
      },
    });
  const base = Buffer.byteLength(event(""));
  if (base > bytes) throw new Error(`a bench event needs at least ${base} bytes, got ${bytes}`);
  return event("x".repeat(bytes - base));
}

/**
 * The `Stripe-Signature` header for `body` at `timestamp` (unix seconds), from `hookledger/testing`'s signer.
 *
 * @example
 * const header = stripeSignature(body, "whsec_bench", Math.floor(Date.now() / 1000));
 */
export function stripeSignature(body: string | Uint8Array, secret: string, timestamp: number): string {
  const header = signDelivery({ provider: "stripe", secret, body, timestamp }).headers["stripe-signature"];
  if (header === undefined) throw new Error("signDelivery returned no stripe-signature header");
  return header;
}

/**
 * The worker contenders' events: event `i` updates subscription `i mod entities` to version `base + ⌊i / entities⌋`,
 * so every entity gets `events / entities` versions, in increasing order of `i`.
 *
 * @example
 * workerEvent(2001, 2000, 1767225600); // { id: "evt_w_2001", subscription: "sub_w_1", created: 1767225601, … }
 */
export function workerEvent(i: number, entities: number, base: number): StripeFields {
  return {
    id: `evt_w_${i}`,
    subscription: `sub_w_${i % entities}`,
    created: base + Math.floor(i / entities),
    status: i % 2 === 0 ? "active" : "past_due",
  };
}

/**
 * Unix seconds every bench body carries as `created` (fixed, so rebuilt bodies are identical).
 *
 * @example
 * workerEvent(0, 2000, CREATED_BASE).created === CREATED_BASE; // true
 */
export const CREATED_BASE = 1_767_225_600;
