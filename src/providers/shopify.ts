import {
  fromBase64,
  hmac,
  matchSecret,
  numberField,
  parseJsonObject,
  secretKeys,
  stringField,
} from "./hmac.js";
import type { EntityRef, HeaderBag, Provider, VerifyInput, VerifyResult } from "./types.js";

/**
 * Shopify: `X-Shopify-Hmac-Sha256` is the base64 HMAC-SHA256 of the raw body with the app's client secret; there is
 * no timestamp and so no window. The dedupe key is `X-Shopify-Event-Id` (the same event delivered to several
 * subscriptions is one event, per shopify.dev "Ignore duplicate webhooks"), else `X-Shopify-Webhook-Id`; the type
 * is `X-Shopify-Topic`. Neither id header is signed, so the body's sha256 dedupes too (docs/architecture.md §3).
 *
 * The entity is typed by the topic's resource (`orders/updated` → `orders`) and versioned by the payload's
 * `updated_at` in milliseconds; `occurredAt` is `X-Shopify-Triggered-At`. Shopify's newer "events" deliveries send
 * the same headers without the `X-` prefix (`shopify-hmac-sha256`, …), which are read as a fallback, as
 * `@shopify/shopify-api` does.
 *
 * @example
 * const provider = shopifyProvider();
 * const result = provider.verify({ body, headers, secrets: [process.env.SHOPIFY_API_SECRET!], now: Date.now() });
 * if (result.ok && "event" in result) console.log(result.event.entity); // { type: "orders", id: "820982911946154508", version: 1735725600000 }
 */
export function shopifyProvider(): Provider {
  const keyOf = secretKeys();
  return {
    name: "shopify",
    verify(input: VerifyInput): VerifyResult {
      const header = shopifyHeader(input.headers, "hmac-sha256");
      if (!header) return { ok: false, reason: "signature_missing" };
      const signature = fromBase64(header.trim());
      if (!signature) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, [signature], (secret) =>
        hmac("sha256", keyOf(secret), [input.body]),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      return parseShopifyEvent(input, secretIndex);
    },
  };
}

function shopifyHeader(headers: HeaderBag, name: string): string | undefined {
  return stringField(headers.get(`x-shopify-${name}`)) ?? stringField(headers.get(`shopify-${name}`));
}

function parseShopifyEvent(input: VerifyInput, secretIndex: number): VerifyResult {
  const json = parseJsonObject(input.body);
  if (!json.ok) return json;
  const id = shopifyHeader(input.headers, "event-id") ?? shopifyHeader(input.headers, "webhook-id");
  if (!id) {
    return {
      ok: false,
      reason: "event_id_missing",
      detail: "neither `X-Shopify-Event-Id` nor `X-Shopify-Webhook-Id` is present",
    };
  }
  const topic = shopifyHeader(input.headers, "topic");
  if (!topic)
    return { ok: false, reason: "event_type_missing", detail: "the `X-Shopify-Topic` header is missing" };
  const triggered = Date.parse(shopifyHeader(input.headers, "triggered-at") ?? "");
  const entity = shopifyEntity(topic, json.value);
  return {
    ok: true,
    secretIndex,
    event: {
      dedupeKey: id,
      type: topic,
      payload: json.value,
      payloadIsBody: true,
      dedupeOnBodyHash: true,
      ...(!Number.isNaN(triggered) && { occurredAt: new Date(triggered) }),
      ...(entity && { entity }),
    },
  };
}

function shopifyEntity(topic: string, payload: Record<string, unknown>): EntityRef | undefined {
  const slash = topic.indexOf("/");
  const type = slash > 0 ? topic.slice(0, slash) : topic;
  const updated = stringField(payload.updated_at);
  const version = updated === undefined ? Number.NaN : Date.parse(updated);
  const id = shopifyId(payload);
  return id !== undefined && !Number.isNaN(version) ? { type, id, version } : undefined;
}

/**
 * Shopify ids are 64-bit integers, and many exceed 2^53 (`820982911946154508`), which `JSON.parse` rounds: two
 * orders could then share an entity id. The exact id is taken from `admin_graphql_api_id`
 * (`gid://shopify/Order/820982911946154508`) when present, else from a string `id`, else from a numeric `id` only
 * when it is a safe integer; otherwise the event has no entity rather than a wrong one.
 */
function shopifyId(payload: Record<string, unknown>): string | undefined {
  const gid = stringField(payload.admin_graphql_api_id);
  const fromGid = gid?.startsWith("gid://") ? stringField(gid.slice(gid.lastIndexOf("/") + 1)) : undefined;
  if (fromGid) return fromGid;
  const id = stringField(payload.id) ?? numberField(payload.id);
  if (typeof id === "number") return Number.isSafeInteger(id) ? String(id) : undefined;
  return id;
}
