import {
  fromHex,
  hmac,
  matchSecret,
  secretKeys,
  numberField,
  parseJsonObject,
  parseUnixSeconds,
  stringField,
  verifyInSteps,
  withinWindow,
} from "./hmac.js";
import type {
  AuthenticateResult,
  EntityRef,
  ParsedEvent,
  ParseResult,
  Provider,
  VerifyInput,
  VerifySteps,
} from "./types.js";

/** Options of the Stripe provider. */
export interface StripeOptions {
  /**
   * How far `t=` may lie from now, in either direction, in seconds.
   * @defaultValue 300 (stripe-node's `DEFAULT_TOLERANCE`)
   * @example stripeProvider({ toleranceSeconds: 600 })
   */
  readonly toleranceSeconds?: number;
}

/**
 * Stripe: `Stripe-Signature: t=…,v1=hex[,v1=…]` over `{t}.{raw}` with HMAC-SHA256; id, type and `created` from the
 * signed body; the entity is `data.object` and its version is the event's `created` (seconds).
 *
 * @example
 * const provider = stripeProvider();
 * const result = provider.verify({ body, headers, secrets: [process.env.STRIPE_WEBHOOK_SECRET!], now: Date.now() });
 */
export function stripeProvider(options: StripeOptions = {}): Provider {
  const keyOf = secretKeys();
  const tolerance = options.toleranceSeconds ?? 300;
  const steps: VerifySteps = {
    authenticate(input: VerifyInput): AuthenticateResult {
      const header = input.headers.get("stripe-signature");
      if (!header) return { ok: false, reason: "signature_missing" };
      let timestamp: string | undefined;
      const signatures: Buffer[] = [];
      for (const item of header.split(",")) {
        const eq = item.indexOf("=");
        if (eq < 0) continue;
        const key = item.slice(0, eq).trim();
        const value = item.slice(eq + 1).trim();
        if (key === "t") timestamp = value;
        // Only v1 is the live scheme; v0 is Stripe's test scheme and is ignored, as stripe-node does.
        else if (key === "v1") signatures.push(fromHex(value) ?? Buffer.alloc(0));
      }
      const t = parseUnixSeconds(timestamp);
      if (t === null) return { ok: false, reason: "timestamp_missing" };
      if (signatures.length === 0) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, signatures, (secret) =>
        hmac("sha256", keyOf(secret), [`${timestamp}.`, input.body]),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      if (!withinWindow(t, input.now, tolerance)) return { ok: false, reason: "timestamp_outside_window" };
      return { ok: true, secretIndex };
    },
    parse: parseStripeBody,
  };
  return {
    name: "stripe",
    verify: verifyInSteps(steps),
    parse: (body) => parseStripeBody(body),
    steps,
  };
}

function parseStripeBody(body: Uint8Array): ParseResult {
  const json = parseJsonObject(body);
  if (!json.ok) return json;
  const parsed = stripeEventFromJson(json.value);
  return parsed.ok ? { ok: true, event: { ...parsed.event, payloadIsBody: true } } : parsed;
}

/**
 * Makes an event out of a Stripe Event object (a webhook body, or an item of `GET /v1/events`): the id is the dedupe
 * key, `type` the type, `created` the time and the entity version of `data.object`.
 *
 * @example
 * const parsed = stripeEventFromJson(await stripe.events.retrieve("evt_1"));
 * if (parsed.ok) await claimEvent(pool, ledger, { ...input, event: parsed.event, arrivedVia: "replay" });
 */
export function stripeEventFromJson(value: Record<string, unknown>): ParseResult {
  const id = stringField(value.id);
  if (!id) return { ok: false, reason: "event_id_missing", detail: "the Stripe event has no `id`" };
  const type = stringField(value.type);
  if (!type) return { ok: false, reason: "event_type_missing", detail: "the Stripe event has no `type`" };
  const created = numberField(value.created);
  const object = (value.data as { object?: Record<string, unknown> } | undefined)?.object;
  const entityType = stringField(object?.object);
  const entityId = stringField(object?.id);
  const entity: EntityRef | undefined =
    entityType && entityId && created !== undefined
      ? { type: entityType, id: entityId, version: created }
      : undefined;
  const event: ParsedEvent = {
    dedupeKey: id,
    type,
    payload: value,
    dedupeOnBodyHash: false,
    ...(created !== undefined && { occurredAt: new Date(created * 1000) }),
    ...(entity && { entity }),
  };
  return { ok: true, event };
}
