import {
  fromBase64,
  fromHex,
  type HmacAlgorithm,
  hmac,
  matchSecret,
  secretKeys,
  numberField,
  parseJsonObject,
  parseUnixSeconds,
  stringField,
  withinWindow,
} from "./hmac.js";
import type { EntityRef, Provider, VerifyInput, VerifyResult } from "./types.js";

/**
 * Options of the Awardee provider. Awardee documents its delivery id (`X-Awardee-Delivery`, reused across retries),
 * its event type (`X-Awardee-Event`) and ordering by a payload timestamp, but has not published its signature
 * scheme, tolerance or rotation behaviour (docs/architecture.md §5). The signature is therefore a configurable HMAC: set these
 * to whatever Awardee confirms, and the defaults (hex HMAC-SHA256 of the raw body in `X-Awardee-Signature`) apply
 * until then.
 *
 * @example
 * awardeeProvider({ prefix: "sha256=", timestampHeader: "x-awardee-timestamp", versionField: "updated_at" })
 */
export interface AwardeeOptions {
  /**
   * The header that carries the signature.
   * @defaultValue "x-awardee-signature"
   * @example awardeeProvider({ signatureHeader: "x-signature" })
   */
  readonly signatureHeader?: string;
  /**
   * The HMAC digest.
   * @defaultValue "sha256"
   * @example awardeeProvider({ algorithm: "sha512" })
   */
  readonly algorithm?: HmacAlgorithm;
  /**
   * How the MAC is written in the header.
   * @defaultValue "hex"
   * @example awardeeProvider({ encoding: "base64" })
   */
  readonly encoding?: "hex" | "base64";
  /**
   * Text before the MAC in the header, which must be present when set.
   * @defaultValue "" (none)
   * @example awardeeProvider({ prefix: "sha256=" })
   */
  readonly prefix?: string;
  /**
   * A header with the unix-seconds send time. When set, the signed string is `{timestamp}.{raw}` and the timestamp
   * must lie within `toleranceSeconds` of now, in either direction; when unset, the raw body alone is signed.
   * @defaultValue undefined (no timestamp, no window)
   * @example awardeeProvider({ timestampHeader: "x-awardee-timestamp" })
   */
  readonly timestampHeader?: string;
  /**
   * The window for `timestampHeader`, in seconds; ignored without it.
   * @defaultValue 300
   * @example awardeeProvider({ timestampHeader: "x-awardee-timestamp", toleranceSeconds: 60 })
   */
  readonly toleranceSeconds?: number;
  /**
   * The top-level payload field holding the entity's version: an ISO 8601 string (compared in milliseconds) or a
   * number (compared as it is).
   * @defaultValue "timestamp"
   * @example awardeeProvider({ versionField: "updated_at" })
   */
  readonly versionField?: string;
  /**
   * The entity type reported for every event.
   * @defaultValue "awardee"
   * @example awardeeProvider({ entityType: "award" })
   */
  readonly entityType?: string;
  /**
   * The top-level payload field holding the entity's id (a string, or a number written in decimal).
   * @defaultValue "id"
   * @example awardeeProvider({ entityIdField: "awardee_id" })
   */
  readonly entityIdField?: string;
}

/**
 * Awardee: a configurable HMAC (see {@link AwardeeOptions}); the dedupe key is `X-Awardee-Delivery`, the type is
 * `X-Awardee-Event`, and the entity is versioned by a payload timestamp. As far as is known the delivery id header is
 * not signed, so the body's sha256 dedupes too, as for GitHub (docs/architecture.md §3).
 *
 * @example
 * const provider = awardeeProvider({ prefix: "sha256=" });
 * const result = provider.verify({ body, headers, secrets: [process.env.AWARDEE_WEBHOOK_SECRET!], now: Date.now() });
 * if (result.ok) console.log(result.event.entity); // { type: "awardee", id: "aw_1", version: 1767225600000 }
 */
export function awardeeProvider(options: AwardeeOptions = {}): Provider {
  const keyOf = secretKeys();
  const signatureHeader = options.signatureHeader ?? "x-awardee-signature";
  const algorithm = options.algorithm ?? "sha256";
  const decode = options.encoding === "base64" ? fromBase64 : fromHex;
  const prefix = options.prefix ?? "";
  const tolerance = options.toleranceSeconds ?? 300;
  return {
    name: "awardee",
    verify(input: VerifyInput): VerifyResult {
      const header = input.headers.get(signatureHeader);
      if (!header) return { ok: false, reason: "signature_missing" };
      let signed: readonly (string | Uint8Array)[] = [input.body];
      let t: number | null = null;
      if (options.timestampHeader !== undefined) {
        const timestamp = input.headers.get(options.timestampHeader);
        t = parseUnixSeconds(timestamp);
        if (t === null) return { ok: false, reason: "timestamp_missing" };
        signed = [`${timestamp}.`, input.body];
      }
      const signature = header.startsWith(prefix) ? decode(header.slice(prefix.length)) : null;
      if (!signature) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, [signature], (secret) =>
        hmac(algorithm, keyOf(secret), signed),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      if (t !== null && !withinWindow(t, input.now, tolerance))
        return { ok: false, reason: "timestamp_outside_window" };
      return parseAwardeeEvent(input, secretIndex, options);
    },
  };
}

function parseAwardeeEvent(input: VerifyInput, secretIndex: number, options: AwardeeOptions): VerifyResult {
  const json = parseJsonObject(input.body);
  if (!json.ok) return json;
  const delivery = stringField(input.headers.get("x-awardee-delivery"));
  if (!delivery)
    return { ok: false, reason: "event_id_missing", detail: "the `X-Awardee-Delivery` header is missing" };
  const type = stringField(input.headers.get("x-awardee-event"));
  if (!type)
    return { ok: false, reason: "event_type_missing", detail: "the `X-Awardee-Event` header is missing" };
  const rawVersion = json.value[options.versionField ?? "timestamp"];
  const iso = stringField(rawVersion);
  const parsed = iso === undefined ? numberField(rawVersion) : Date.parse(iso);
  const version = parsed === undefined || Number.isNaN(parsed) ? undefined : parsed;
  const rawId = json.value[options.entityIdField ?? "id"];
  const id = stringField(rawId) ?? numberField(rawId)?.toString();
  const entity: EntityRef | undefined =
    id !== undefined && version !== undefined
      ? { type: options.entityType ?? "awardee", id, version }
      : undefined;
  return {
    ok: true,
    secretIndex,
    event: {
      dedupeKey: delivery,
      type,
      payload: json.value,
      payloadIsBody: true,
      dedupeOnBodyHash: true,
      // Only an ISO string is surely a time; a number may be seconds, milliseconds or a counter.
      ...(iso !== undefined && version !== undefined && { occurredAt: new Date(version) }),
      ...(entity && { entity }),
    },
  };
}
