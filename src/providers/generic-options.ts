import type { HmacAlgorithm } from "./hmac.js";

/**
 * Options of the generic HMAC provider, for senders hookledger has no module for. The signature, the id and the
 * type must each be configured; the config validator (and `genericOptionProblems`) names every mistake.
 *
 * @example
 * // Sender signs "{timestamp}.{body}" as hex HMAC-SHA256 in "X-Signature: sha256=…" and puts the id in the body.
 * genericProvider({
 *   signatureHeader: "x-signature", algorithm: "sha256", encoding: "hex", prefix: "sha256=",
 *   timestampHeader: "x-timestamp", idPointer: "/id", typePointer: "/type",
 *   entityType: "order", entityIdPointer: "/data/id", versionPointer: "/data/updated_at",
 * })
 */
export interface GenericOptions {
  /** The header that carries the MAC. @example { signatureHeader: "x-signature" } */
  readonly signatureHeader: string;
  /** The HMAC digest. @example { algorithm: "sha512" } */
  readonly algorithm: HmacAlgorithm;
  /** How the MAC is written in the header. @example { encoding: "base64" } */
  readonly encoding: "hex" | "base64";
  /**
   * Text before the MAC in the header, which must then be present.
   * @defaultValue "" (none)
   * @example { prefix: "sha256=" }
   */
  readonly prefix?: string;
  /**
   * A header with the unix-seconds send time, which must lie within `toleranceSeconds` of now in either direction
   * and must be signed (`{timestamp}` in `signedTemplate`).
   * @defaultValue undefined (no timestamp, no window)
   * @example { timestampHeader: "x-timestamp" }
   */
  readonly timestampHeader?: string;
  /**
   * What the sender signs. Placeholders: `{body}` (the raw bytes, exactly once), `{timestamp}` (the
   * `timestampHeader` value as received) and `{header:Name}` (any request header, which must then be present);
   * everything else is literal text, and `{` may appear only in a placeholder.
   * @defaultValue "{body}", or "{timestamp}.{body}" when `timestampHeader` is set
   * @example { signedTemplate: "{header:X-Request-Id}:{timestamp}:{body}" }
   */
  readonly signedTemplate?: string;
  /**
   * The window for `timestampHeader`, in seconds; overrides the source's `toleranceSeconds`.
   * @defaultValue the source's `toleranceSeconds`, else 300
   * @example { toleranceSeconds: 60 }
   */
  readonly toleranceSeconds?: number;
  /**
   * Id strategy 1 of 3: a header with the event's id. Unless the header is signed (`{header:Name}` in the
   * template), the body's sha256 dedupes too, so a body re-sent under a new id is still a duplicate.
   * @example { idHeader: "x-event-id" }
   */
  readonly idHeader?: string;
  /**
   * Id strategy 2 of 3: an RFC 6901 JSON pointer to the id in the body (a string, or a whole number below 2^53).
   * @example { idPointer: "/data/event/id" }
   */
  readonly idPointer?: string;
  /**
   * Id strategy 3 of 3, the last resort for senders that ship no id: the dedupe key is `sha256:` plus the hash of
   * the values at these pointers (keys sorted, so re-serialisation does not matter). Choose fields that identify
   * the event and never change between retries; the service warns at start that this strategy is in use.
   * @example { stableFields: ["/object/id", "/object/updated_at", "/action"] }
   */
  readonly stableFields?: readonly string[];
  /** The event type from a header (exactly one of `typeHeader`, `typePointer`). @example { typeHeader: "x-event-type" } */
  readonly typeHeader?: string;
  /** The event type from the body (a string). @example { typePointer: "/type" } */
  readonly typePointer?: string;
  /**
   * The entity's version: a number as it is, a string of digits as that number, or a date string in
   * milliseconds (which is also the event's `occurredAt`).
   * @example { versionPointer: "/data/updated_at" }
   */
  readonly versionPointer?: string;
  /** The entity type of every event (or `entityTypePointer`). @example { entityType: "order" } */
  readonly entityType?: string;
  /** The entity type from the body (or a fixed `entityType`). @example { entityTypePointer: "/data/object" } */
  readonly entityTypePointer?: string;
  /**
   * The entity id in the body; with a version and an entity type, events carry an entity for the version guard.
   * @example { entityIdPointer: "/data/id" }
   */
  readonly entityIdPointer?: string;
}

/** One piece of a compiled `signedTemplate`. */
export type TemplatePart = { literal: string } | { body: true } | { timestamp: true } | { header: string };

/** A valid header name (RFC 9110 token). */
export const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;

/**
 * Compiles a `signedTemplate` into parts.
 * @returns the parts, or a sentence saying what is wrong.
 * @example
 * compileTemplate("{timestamp}.{body}"); // [{ timestamp: true }, { literal: "." }, { body: true }]
 */
export function compileTemplate(template: string): TemplatePart[] | string {
  const parts: TemplatePart[] = [];
  let rest = template;
  while (rest.length > 0) {
    const open = rest.indexOf("{");
    if (open !== 0) {
      const literal = open < 0 ? rest : rest.slice(0, open);
      if (literal.includes("}")) return "'}' may appear only closing a placeholder";
      parts.push({ literal });
      rest = rest.slice(literal.length);
      continue;
    }
    const close = rest.indexOf("}");
    const name = close < 0 ? rest : rest.slice(1, close);
    if (name === "body") parts.push({ body: true });
    else if (name === "timestamp") parts.push({ timestamp: true });
    else if (name.startsWith("header:") && HEADER_NAME.test(name.slice(7)))
      parts.push({ header: name.slice(7) });
    else
      return `unknown placeholder ${JSON.stringify(close < 0 ? rest : rest.slice(0, close + 1))}; use {body}, {timestamp} or {header:Name}`;
    rest = rest.slice(close + 1);
  }
  if (parts.filter((p) => "body" in p).length !== 1) return "it must contain {body} exactly once";
  return parts;
}
