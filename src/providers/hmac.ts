import { createHmac, timingSafeEqual } from "node:crypto";
import { jsonTooDeep, TOO_DEEP_DETAIL } from "./json-depth.js";
import type { ParseFailureReason, VerifyInput, VerifyResult, VerifySteps } from "./types.js";

/** HMAC digest algorithms a source may be configured with. */
export type HmacAlgorithm = "sha256" | "sha512";

/** Computes an HMAC over the concatenation of `parts` without joining them into one buffer first. */
export function hmac(
  algorithm: HmacAlgorithm,
  key: string | Uint8Array,
  parts: readonly (string | Uint8Array)[],
) {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * Remembers each secret's HMAC key, made by `encode` (UTF-8 bytes by default) the first time the secret is seen:
 * given a string, `createHmac` encodes it again on every call. Providers make one per source; a source has a few
 * secrets, so the memory is cleared past 16 (a caller passing ever-new secrets only loses the shortcut).
 *
 * @example
 * const keyOf = secretKeys();
 * hmac("sha256", keyOf(secret), [body]);
 */
export function secretKeys<K = Buffer>(
  encode: (secret: string) => K = (secret) => Buffer.from(secret, "utf8") as K,
): (secret: string) => K {
  const keys = new Map<string, K>();
  return (secret) => {
    if (keys.has(secret)) return keys.get(secret) as K;
    if (keys.size >= 16) keys.clear();
    const key = encode(secret);
    keys.set(secret, key);
    return key;
  };
}

/**
 * Constant-time comparison of an expected MAC with a received one. The byte-length check comes first because
 * `timingSafeEqual` throws on unequal lengths (docs/architecture.md §5: a length mismatch is a 401, never an exception).
 */
export function macEquals(expected: Uint8Array, received: Uint8Array): boolean {
  return expected.length === received.length && timingSafeEqual(expected, received);
}

const HEX = /^[0-9a-fA-F]*$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decodes a received hex MAC; `null` when it is not hex (so it can never match). */
export function fromHex(text: string): Buffer | null {
  return text.length % 2 === 0 && HEX.test(text) ? Buffer.from(text, "hex") : null;
}

/** Decodes a received base64 MAC; `null` when it is not canonical base64. */
export function fromBase64(text: string): Buffer | null {
  return text.length % 4 === 0 && BASE64.test(text) ? Buffer.from(text, "base64") : null;
}

/**
 * Finds the first secret whose MAC matches any of the received signatures.
 * @returns the index of the matching secret, or -1.
 */
export function matchSecret(
  secrets: readonly string[],
  received: readonly Buffer[],
  macFor: (secret: string) => Buffer,
): number {
  for (const [index, secret] of secrets.entries()) {
    const expected = macFor(secret);
    // Every candidate is compared (no early exit inside one secret) so timing says nothing about which one failed.
    let matched = false;
    for (const candidate of received) matched = macEquals(expected, candidate) || matched;
    if (matched) return index;
  }
  return -1;
}

/** Parses a unix-seconds header value strictly (digits only); `null` otherwise. */
export function parseUnixSeconds(text: string | null | undefined): number | null {
  if (text === null || text === undefined || !/^\d{1,12}$/.test(text)) return null;
  return Number(text);
}

/** Symmetric window check: a timestamp too far in the past or in the future is refused alike. */
export function withinWindow(timestampSeconds: number, nowMs: number, toleranceSeconds: number): boolean {
  return Math.abs(nowMs / 1000 - timestampSeconds) <= toleranceSeconds;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Parses a body that must be a JSON object, nested no deeper than `MAX_JSON_DEPTH`. */
export function parseJsonObject(
  body: Uint8Array,
): { ok: true; value: Record<string, unknown> } | { ok: false; reason: ParseFailureReason; detail: string } {
  try {
    const text = decoder.decode(body);
    if (jsonTooDeep(text)) return { ok: false, reason: "body_too_deep", detail: TOO_DEEP_DETAIL };
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      return { ok: true, value: value as Record<string, unknown> };
    }
  } catch {
    // Falls through to the uniform answer below: the parser's message is not for the client.
  }
  return { ok: false, reason: "body_not_json", detail: "the body must be a JSON object" };
}

/** A non-empty string field, else `undefined`. */
export function stringField(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/** A finite number field, else `undefined`. */
export function numberField(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/**
 * `verify` made of a provider's two steps, so the two can never differ: authenticate, then parse the body.
 *
 * @example
 * return { name: "stripe", verify: verifyInSteps(steps), steps };
 */
export function verifyInSteps(steps: VerifySteps): (input: VerifyInput) => VerifyResult {
  return (input) => {
    const checked = steps.authenticate(input);
    if (!checked.ok) return checked;
    const parsed = steps.parse(input.body);
    return parsed.ok ? { ok: true, secretIndex: checked.secretIndex, event: parsed.event } : parsed;
  };
}
