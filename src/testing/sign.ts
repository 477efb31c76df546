import { randomUUID } from "node:crypto";
import type { ProviderName } from "../config/types.js";
import type { AwardeeOptions } from "../providers/awardee.js";
import { compileTemplate, type GenericOptions, type TemplatePart } from "../providers/generic-options.js";
import { type HmacAlgorithm, hmac } from "../providers/hmac.js";
import { standardSecretKey } from "../providers/standard.js";

/**
 * Which provider signs, and how: the same `provider`, `awardee` and `generic` settings as a source in
 * `hookledger.config.mjs`, plus the one secret to sign with.
 *
 * @example
 * const signer: DeliverySigner = { provider: "stripe", secret: "whsec_test" };
 */
export interface DeliverySigner {
  readonly provider: ProviderName;
  /** One of the source's secrets (Standard Webhooks: the `whsec_…` base64 secret). */
  readonly secret: string;
  /** The `awardee` options of the source, if it has any. @example { prefix: "sha256=" } */
  readonly awardee?: AwardeeOptions;
  /** The `generic` options of the source: required for `provider: "generic"`. */
  readonly generic?: GenericOptions;
}

/**
 * One delivery to sign.
 *
 * @example
 * signDelivery({ provider: "github", secret: "s3cret", body: { action: "opened" }, type: "issues" });
 */
export interface SignDeliveryOptions extends DeliverySigner {
  /** The raw body: a string or bytes are sent as they are, anything else as `JSON.stringify(body)`. */
  readonly body: string | Uint8Array | object;
  /**
   * The event or delivery id, for providers that send it in a header (`X-GitHub-Delivery`, `X-Shopify-Event-Id`,
   * `webhook-id`, `X-Awardee-Delivery`, generic `idHeader`); a random one when unset. Providers that read the id
   * from the body (stripe, paddle, slack, generic `idPointer`) refuse it: put it in the body.
   * @example { id: "72d3162e-cc78-11e3-81ab-4c9367dc0958" }
   */
  readonly id?: string;
  /**
   * The event type, for providers that send it in a header (`X-GitHub-Event`, `X-Shopify-Topic`,
   * `X-Awardee-Event`, generic `typeHeader`), where it is required; the others read it from the body.
   * @example { type: "push" }
   */
  readonly type?: string;
  /** The signing time, unix seconds or a Date. @defaultValue now */
  readonly timestamp?: number | Date;
  /** More headers to send; a generic `signedTemplate`'s `{header:Name}` reads them. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A validly signed delivery: POST `body` with `headers` (names lower-case, `content-type` included).
 *
 * @example
 * const { headers, body } = signDelivery({ provider: "stripe", secret, body: event });
 * await fetch("http://127.0.0.1:3000/webhooks/stripe", { method: "POST", headers, body });
 */
export interface SignedDelivery {
  readonly headers: Record<string, string>;
  readonly body: Uint8Array<ArrayBuffer>;
}

/**
 * Signs a delivery the way the source's provider does, with a fresh timestamp unless one is given, so that the
 * source's verify accepts it (docs/testing.md).
 *
 * @throws TypeError for misuse: a header-typed provider without `type`, an `id` for a provider that reads it from
 * the body, `generic` without its options, or a generic template naming a header that is not given.
 * @example
 * import { signDelivery } from "hookledger/testing";
 *
 * const delivery = signDelivery({
 *   provider: "stripe",
 *   secret: "whsec_test_secret",
 *   body: { id: "evt_1", object: "event", type: "invoice.paid", created: 1767225600, data: { object: {} } },
 * });
 * await fetch("http://127.0.0.1:3000/webhooks/stripe", { method: "POST", ...delivery });
 */
export function signDelivery(options: SignDeliveryOptions): SignedDelivery {
  const body = bodyBytes(options.body);
  const t = timestampSeconds(options.timestamp);
  const ts = String(t);
  const header = idHeaderOf(options);
  if (options.id !== undefined && header === undefined) {
    throw new TypeError(`the ${options.provider} provider reads the event id from the body: put it there`);
  }
  const id = options.id ?? randomUUID();
  const typed = typeHeaderOf(options);
  if (typed !== undefined && options.type === undefined) {
    throw new TypeError(`the ${options.provider} provider reads the event type from ${typed}: pass \`type\``);
  }
  const type = options.type ?? "";
  const headers: Record<string, string> = { "content-type": contentType(body) };
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  const mac = (algorithm: HmacAlgorithm, key: string | Uint8Array, ...parts: (string | Uint8Array)[]) =>
    hmac(algorithm, key, parts);
  const { secret } = options;
  switch (options.provider) {
    case "stripe":
      headers["stripe-signature"] = `t=${ts},v1=${mac("sha256", secret, `${ts}.`, body).toString("hex")}`;
      break;
    case "github":
      headers["x-github-event"] = type;
      headers["x-github-delivery"] = id;
      headers["x-hub-signature-256"] = `sha256=${mac("sha256", secret, body).toString("hex")}`;
      break;
    case "shopify":
      headers["x-shopify-topic"] = type;
      headers["x-shopify-event-id"] = id;
      headers["x-shopify-webhook-id"] ??= id;
      headers["x-shopify-triggered-at"] = new Date(t * 1000).toISOString();
      headers["x-shopify-shop-domain"] ??= "hookledger-test.myshopify.com";
      headers["x-shopify-api-version"] ??= "2025-10";
      headers["x-shopify-hmac-sha256"] = mac("sha256", secret, body).toString("base64");
      break;
    case "paddle":
      headers["paddle-signature"] = `ts=${ts};h1=${mac("sha256", secret, `${ts}:`, body).toString("hex")}`;
      break;
    case "slack":
      headers["x-slack-request-timestamp"] = ts;
      headers["x-slack-signature"] = `v0=${mac("sha256", secret, `v0:${ts}:`, body).toString("hex")}`;
      break;
    case "standard": {
      const key = standardSecretKey(secret);
      if (!key) throw new TypeError("a Standard Webhooks secret is base64, optionally prefixed 'whsec_'");
      headers["webhook-id"] = id;
      headers["webhook-timestamp"] = ts;
      headers["webhook-signature"] = `v1,${mac("sha256", key, `${id}.${ts}.`, body).toString("base64")}`;
      break;
    }
    case "awardee":
      signAwardee(options.awardee ?? {}, { secret, body, ts, id, type, headers });
      break;
    case "generic":
      signGeneric(genericOf(options), { secret, body, ts, id, type, headers });
      break;
  }
  return { headers, body };
}

interface Signing {
  readonly secret: string;
  readonly body: Uint8Array;
  readonly ts: string;
  readonly id: string;
  readonly type: string;
  readonly headers: Record<string, string>;
}

function signAwardee(options: AwardeeOptions, s: Signing): void {
  s.headers["x-awardee-delivery"] = s.id;
  s.headers["x-awardee-event"] = s.type;
  const parts: (string | Uint8Array)[] = [s.body];
  if (options.timestampHeader !== undefined) {
    s.headers[options.timestampHeader.toLowerCase()] = s.ts;
    parts.unshift(`${s.ts}.`);
  }
  const digest = hmac(options.algorithm ?? "sha256", s.secret, parts);
  s.headers[(options.signatureHeader ?? "x-awardee-signature").toLowerCase()] =
    `${options.prefix ?? ""}${digest.toString(options.encoding ?? "hex")}`;
}

function signGeneric(options: GenericOptions, s: Signing): void {
  if (options.idHeader !== undefined) s.headers[options.idHeader.toLowerCase()] = s.id;
  if (options.typeHeader !== undefined) s.headers[options.typeHeader.toLowerCase()] = s.type;
  if (options.timestampHeader !== undefined) s.headers[options.timestampHeader.toLowerCase()] = s.ts;
  const template =
    options.signedTemplate ?? (options.timestampHeader === undefined ? "{body}" : "{timestamp}.{body}");
  const parts = compileTemplate(template);
  if (typeof parts === "string") throw new TypeError(`generic.signedTemplate: ${parts}`);
  const signed = parts.map((part: TemplatePart) => {
    if ("literal" in part) return part.literal;
    if ("body" in part) return s.body;
    if ("timestamp" in part) return s.ts;
    const value = s.headers[part.header.toLowerCase()];
    if (value === undefined)
      throw new TypeError(`the signed template names ${part.header}: pass it in headers`);
    return value;
  });
  const digest = hmac(options.algorithm, s.secret, signed);
  s.headers[options.signatureHeader.toLowerCase()] =
    `${options.prefix ?? ""}${digest.toString(options.encoding)}`;
}

function genericOf(options: DeliverySigner): GenericOptions {
  if (!options.generic) throw new TypeError("the generic provider needs its options: pass `generic`");
  return options.generic;
}

/**
 * The header a provider reads the event id from, or `undefined` when it reads it from the body.
 *
 * @example
 * idHeaderOf({ provider: "github", secret: "s" }); // "x-github-delivery"
 */
export function idHeaderOf(signer: DeliverySigner): string | undefined {
  switch (signer.provider) {
    case "github":
      return "x-github-delivery";
    case "shopify":
      return "x-shopify-event-id";
    case "standard":
      return "webhook-id";
    case "awardee":
      return "x-awardee-delivery";
    case "generic":
      return genericOf(signer).idHeader?.toLowerCase();
    default:
      return undefined;
  }
}

/**
 * The header a provider reads the event type from, or `undefined` when it reads it from the body.
 *
 * @example
 * typeHeaderOf({ provider: "github", secret: "s" }); // "X-GitHub-Event"
 */
export function typeHeaderOf(signer: DeliverySigner): string | undefined {
  switch (signer.provider) {
    case "github":
      return "X-GitHub-Event";
    case "shopify":
      return "X-Shopify-Topic";
    case "awardee":
      return "X-Awardee-Event";
    case "generic":
      return genericOf(signer).typeHeader;
    default:
      return undefined;
  }
}

function bodyBytes(body: SignDeliveryOptions["body"]): Uint8Array<ArrayBuffer> {
  if (typeof body === "string") return new TextEncoder().encode(body);
  if (body instanceof Uint8Array) return new Uint8Array(body);
  return new TextEncoder().encode(JSON.stringify(body));
}

function timestampSeconds(timestamp: number | Date | undefined): number {
  if (timestamp instanceof Date) return Math.floor(timestamp.getTime() / 1000);
  return Math.floor(timestamp ?? Date.now() / 1000);
}

// Slack's slash commands and interactions arrive as forms; everything else hookledger verifies is JSON.
function contentType(body: Uint8Array): string {
  const first = body.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  return first === undefined || first === 0x7b || first === 0x5b
    ? "application/json"
    : "application/x-www-form-urlencoded";
}
