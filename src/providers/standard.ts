import {
  fromBase64,
  hmac,
  matchSecret,
  secretKeys,
  parseJsonObject,
  parseUnixSeconds,
  stringField,
  withinWindow,
} from "./hmac.js";
import type { EntityRef, HeaderBag, Provider, VerifyInput, VerifyResult } from "./types.js";

/** Options of the Standard Webhooks provider. */
export interface StandardOptions {
  /**
   * How far `webhook-timestamp` may lie from now, in either direction, in seconds.
   * @defaultValue 300 (the reference library's `WEBHOOK_TOLERANCE_IN_SECONDS`)
   * @example standardProvider({ toleranceSeconds: 600 })
   */
  readonly toleranceSeconds?: number;
}

const SECRET_PREFIX = "whsec_";
const SHA256_BYTES = 32;

/**
 * The HMAC key of a Standard Webhooks secret: the base64 decoding of the secret after an optional `whsec_` prefix.
 * The config validator calls it so that a secret which is not base64 is refused at startup, not at the first delivery.
 *
 * @returns the key, or `null` when the secret is not canonical base64 or decodes to nothing.
 * @example
 * standardSecretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); // a 24-byte Buffer
 * standardSecretKey("not base64!"); // null
 */
export function standardSecretKey(secret: string): Buffer | null {
  const key = fromBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  return key && key.length > 0 ? key : null;
}

/**
 * Standard Webhooks (and Svix, which sends the same scheme under `svix-*` header names): `webhook-signature` is a
 * space-delimited list of `v1,base64` over `{webhook-id}.{webhook-timestamp}.{raw}` with HMAC-SHA256; the dedupe key
 * is the signed `webhook-id`, the type is body `type`, and the time is body `timestamp`. The entity is `data.id`,
 * typed by the prefix of `type` (`invoice.paid` → `invoice`), versioned by `timestamp` in milliseconds.
 *
 * @example
 * const provider = standardProvider();
 * const result = provider.verify({ body, headers, secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"], now: Date.now() });
 * if (result.ok) console.log(result.event.dedupeKey); // "msg_p5jXN8AQM9LWM0D4loKWxJek"
 */
export function standardProvider(options: StandardOptions = {}): Provider {
  const keyOf = secretKeys(standardSecretKey);
  const tolerance = options.toleranceSeconds ?? 300;
  return {
    name: "standard",
    verify(input: VerifyInput): VerifyResult {
      const header = standardHeader(input.headers, "signature");
      if (!header) return { ok: false, reason: "signature_missing" };
      const timestamp = standardHeader(input.headers, "timestamp");
      const t = parseUnixSeconds(timestamp);
      if (t === null) return { ok: false, reason: "timestamp_missing" };
      const id = standardHeader(input.headers, "id");
      // The id is part of the signed string, so without it nothing can be verified: a 401, not a 400.
      if (!id) return { ok: false, reason: "signature_malformed" };
      const signatures: Buffer[] = [];
      for (const item of header.split(" ")) {
        const comma = item.indexOf(",");
        // Only v1 (HMAC); v1a (ed25519) and unknown versions are skipped, as the reference library does.
        if (comma < 0 || item.slice(0, comma) !== "v1") continue;
        const mac = fromBase64(item.slice(comma + 1));
        if (mac?.length === SHA256_BYTES) signatures.push(mac);
      }
      if (signatures.length === 0) return { ok: false, reason: "signature_malformed" };
      // An undecodable secret yields an empty MAC, which cannot equal any of the 32-byte candidates kept above.
      const secretIndex = matchSecret(input.secrets, signatures, (secret) => {
        const key = keyOf(secret);
        return key ? hmac("sha256", key, [`${id}.${timestamp}.`, input.body]) : Buffer.alloc(0);
      });
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      if (!withinWindow(t, input.now, tolerance)) return { ok: false, reason: "timestamp_outside_window" };
      return parseStandardEvent(input.body, id, secretIndex);
    },
  };
}

/** The standard header, else its Svix-branded twin (`svix-id`, …), which the `svix` library maps the same way. */
function standardHeader(headers: HeaderBag, name: "id" | "timestamp" | "signature"): string | undefined {
  return stringField(headers.get(`webhook-${name}`)) ?? stringField(headers.get(`svix-${name}`));
}

function parseStandardEvent(body: Uint8Array, id: string, secretIndex: number): VerifyResult {
  const json = parseJsonObject(body);
  if (!json.ok) return json;
  const type = stringField(json.value.type);
  if (!type) return { ok: false, reason: "event_type_missing", detail: "the event has no `type`" };
  const timestamp = stringField(json.value.timestamp);
  const ms = timestamp === undefined ? Number.NaN : Date.parse(timestamp);
  const occurredAt = Number.isNaN(ms) ? undefined : new Date(ms);
  const dot = type.indexOf(".");
  const entityType = dot > 0 ? type.slice(0, dot) : undefined;
  const entityId = stringField((json.value.data as { id?: unknown } | null | undefined)?.id);
  const entity: EntityRef | undefined =
    entityType && entityId && occurredAt ? { type: entityType, id: entityId, version: ms } : undefined;
  return {
    ok: true,
    secretIndex,
    event: {
      dedupeKey: id,
      type,
      payload: json.value,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      ...(occurredAt && { occurredAt }),
      ...(entity && { entity }),
    },
  };
}
