import {
  fromHex,
  hmac,
  matchSecret,
  secretKeys,
  parseJsonObject,
  parseUnixSeconds,
  stringField,
  verifyInSteps,
  withinWindow,
} from "./hmac.js";
import type {
  AuthenticateResult,
  EntityRef,
  ParseResult,
  Provider,
  VerifyInput,
  VerifySteps,
} from "./types.js";

/** Options of the Paddle provider. */
export interface PaddleOptions {
  /**
   * How far `ts=` may lie from now, in either direction, in seconds. Paddle's tolerance is tight: verify at
   * ingress (as hookledger does), never in a delayed worker.
   * @defaultValue 5 (the Node SDK's `MAX_VALID_TIME_DIFFERENCE`; developer.paddle.com: "five-second timestamp
   * tolerance by default")
   * @example paddleProvider({ toleranceSeconds: 30 })
   */
  readonly toleranceSeconds?: number;
}

/**
 * Paddle Billing: `Paddle-Signature: ts=…;h1=hex[;h1=…]` over `{ts}:{raw}` with HMAC-SHA256 and the notification
 * destination's secret key. Every `h1` is tried (Paddle sends one per active secret while a secret is rotated; the
 * official SDK keeps only the last), and the window is symmetric where the SDK checks age only.
 *
 * The dedupe key is body `event_id` (signed), the type body `event_type`, the time body `occurred_at`. The entity
 * is `data.id`, typed by the prefix of the type (`subscription.updated` → `subscription`) and versioned by
 * `occurred_at` in milliseconds (Paddle writes microseconds; the guard lets equal versions advance).
 *
 * @example
 * const provider = paddleProvider();
 * const result = provider.verify({ body, headers, secrets: [process.env.PADDLE_WEBHOOK_SECRET!], now: Date.now() });
 * if (result.ok && "event" in result) console.log(result.event.dedupeKey); // "evt_01hv8x2acma2gz3he1k1ajddzt"
 */
export function paddleProvider(options: PaddleOptions = {}): Provider {
  const keyOf = secretKeys();
  const tolerance = options.toleranceSeconds ?? 5;
  const steps: VerifySteps = {
    authenticate(input: VerifyInput): AuthenticateResult {
      const header = input.headers.get("paddle-signature");
      if (!header) return { ok: false, reason: "signature_missing" };
      const timestamps: string[] = [];
      const signatures: Buffer[] = [];
      for (const item of header.split(";")) {
        const eq = item.indexOf("=");
        if (eq < 0) continue;
        const key = item.slice(0, eq).trim();
        const value = item.slice(eq + 1).trim();
        if (key === "ts") timestamps.push(value);
        else if (key === "h1") {
          const mac = fromHex(value);
          if (mac) signatures.push(mac);
        }
      }
      // Two `ts=` would make "the" signed timestamp ambiguous; nothing Paddle sends has them.
      const timestamp = timestamps.length === 1 ? timestamps[0] : undefined;
      const t = parseUnixSeconds(timestamp);
      if (t === null) return { ok: false, reason: "timestamp_missing" };
      if (signatures.length === 0) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, signatures, (secret) =>
        hmac("sha256", keyOf(secret), [`${timestamp}:`, input.body]),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      if (!withinWindow(t, input.now, tolerance)) return { ok: false, reason: "timestamp_outside_window" };
      return { ok: true, secretIndex };
    },
    parse: parsePaddleEvent,
  };
  return {
    name: "paddle",
    verify: verifyInSteps(steps),
    steps,
  };
}

function parsePaddleEvent(body: Uint8Array): ParseResult {
  const json = parseJsonObject(body);
  if (!json.ok) return json;
  const id = stringField(json.value.event_id);
  if (!id) return { ok: false, reason: "event_id_missing", detail: "the Paddle event has no `event_id`" };
  const type = stringField(json.value.event_type);
  if (!type)
    return { ok: false, reason: "event_type_missing", detail: "the Paddle event has no `event_type`" };
  const occurred = stringField(json.value.occurred_at);
  const ms = occurred === undefined ? Number.NaN : Date.parse(occurred);
  const dot = type.indexOf(".");
  const entityType = dot > 0 ? type.slice(0, dot) : undefined;
  const entityId = stringField((json.value.data as { id?: unknown } | null | undefined)?.id);
  const entity: EntityRef | undefined =
    entityType && entityId && !Number.isNaN(ms) ? { type: entityType, id: entityId, version: ms } : undefined;
  return {
    ok: true,
    event: {
      dedupeKey: id,
      type,
      payload: json.value,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      ...(!Number.isNaN(ms) && { occurredAt: new Date(ms) }),
      ...(entity && { entity }),
    },
  };
}
