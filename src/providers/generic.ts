import { createHash } from "node:crypto";
import { genericOptionProblems } from "./generic-check.js";
import { compileTemplate, type GenericOptions, type TemplatePart } from "./generic-options.js";
import {
  fromBase64,
  fromHex,
  hmac,
  matchSecret,
  secretKeys,
  numberField,
  parseJsonObject,
  parseUnixSeconds,
  stringField,
  withinWindow,
} from "./hmac.js";
import { canonicalJson, parsePointer, resolvePointer } from "./json-pointer.js";
import type { EntityRef, HeaderBag, Provider, VerifyInput, VerifyResult } from "./types.js";

export type { GenericOptions } from "./generic-options.js";

/**
 * A configurable HMAC provider (see {@link GenericOptions}): the MAC in one header, over a template of the raw
 * body, an optional timestamp header and any other headers; the id from a header, a JSON pointer, or (last resort)
 * a hash of stable fields; the type from a header or a pointer; an optional entity from pointers. The body must be
 * a JSON object.
 *
 * @throws TypeError when the options are unusable (the same problems `resolveConfig` reports at startup).
 * @example
 * const provider = genericProvider({
 *   signatureHeader: "x-signature", algorithm: "sha256", encoding: "base64",
 *   idHeader: "x-event-id", typePointer: "/event",
 * });
 * const result = provider.verify({ body, headers, secrets: [process.env.ACME_WEBHOOK_SECRET!], now: Date.now() });
 */
export function genericProvider(options: GenericOptions): Provider {
  const keyOf = secretKeys();
  const problems = genericOptionProblems("generic", options);
  if (problems.length > 0) throw new TypeError(`invalid generic provider options:\n${problems.join("\n")}`);
  const template =
    options.signedTemplate ?? (options.timestampHeader === undefined ? "{body}" : "{timestamp}.{body}");
  const parts = compileTemplate(template) as TemplatePart[];
  const decode = options.encoding === "base64" ? fromBase64 : fromHex;
  const prefix = options.prefix ?? "";
  const tolerance = options.toleranceSeconds ?? 300;
  const signedHeaders = new Set(parts.flatMap((p) => ("header" in p ? [p.header.toLowerCase()] : [])));
  const extract = extractor(options, signedHeaders);
  return {
    name: "generic",
    verify(input: VerifyInput): VerifyResult {
      const header = input.headers.get(options.signatureHeader);
      if (!header) return { ok: false, reason: "signature_missing" };
      let timestamp: string | null = null;
      let t: number | null = null;
      if (options.timestampHeader !== undefined) {
        timestamp = input.headers.get(options.timestampHeader);
        t = parseUnixSeconds(timestamp);
        if (t === null) return { ok: false, reason: "timestamp_missing" };
      }
      const signature = header.startsWith(prefix) ? decode(header.slice(prefix.length)) : null;
      if (!signature) return { ok: false, reason: "signature_malformed" };
      const signed = signedParts(parts, input, timestamp ?? "");
      // A header the template names is part of the signed string: without it nothing can be verified.
      if (!signed) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, [signature], (secret) =>
        hmac(options.algorithm, keyOf(secret), signed),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      if (t !== null && !withinWindow(t, input.now, tolerance))
        return { ok: false, reason: "timestamp_outside_window" };
      return extract(input, secretIndex);
    },
  };
}

function signedParts(
  parts: readonly TemplatePart[],
  input: VerifyInput,
  timestamp: string,
): (string | Uint8Array)[] | null {
  const signed: (string | Uint8Array)[] = [];
  for (const part of parts) {
    if ("literal" in part) signed.push(part.literal);
    else if ("body" in part) signed.push(input.body);
    else if ("timestamp" in part) signed.push(timestamp);
    else {
      const value = input.headers.get(part.header);
      if (value === null) return null;
      signed.push(value);
    }
  }
  return signed;
}

type Read = (headers: HeaderBag, payload: Record<string, unknown>) => unknown;

function reader(header: string | undefined, pointer: string | undefined): Read | undefined {
  if (header !== undefined) return (headers) => headers.get(header) ?? undefined;
  const tokens = pointer === undefined ? null : parsePointer(pointer);
  return tokens ? (_, payload) => resolvePointer(payload, tokens) : undefined;
}

/** A string, or a whole number JSON.parse kept exact, as text; else `undefined`. */
function idText(value: unknown): string | undefined {
  const n = numberField(value);
  return n !== undefined && Number.isSafeInteger(n) ? String(n) : stringField(value);
}

function versionOf(value: unknown): { version: number; date: boolean } | undefined {
  const n = numberField(value);
  if (n !== undefined) return { version: n, date: false };
  const text = stringField(value);
  if (text === undefined) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return { version: Number(text), date: false };
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : { version: ms, date: true };
}

function extractor(options: GenericOptions, signedHeaders: ReadonlySet<string>) {
  const readId = reader(options.idHeader, options.idPointer);
  const stable = options.stableFields?.map((p) => parsePointer(p) ?? []);
  const readType = reader(options.typeHeader, options.typePointer) as Read;
  const readVersion = reader(undefined, options.versionPointer);
  const readEntityType = reader(undefined, options.entityTypePointer);
  const readEntityId = reader(undefined, options.entityIdPointer);
  const idSource = options.idHeader ? `the \`${options.idHeader}\` header` : `\`${options.idPointer}\``;
  const dedupeOnBodyHash =
    options.idHeader !== undefined && !signedHeaders.has(options.idHeader.toLowerCase());

  return (input: VerifyInput, secretIndex: number): VerifyResult => {
    const json = parseJsonObject(input.body);
    if (!json.ok) return json;
    const payload = json.value;
    let id: string | undefined;
    if (stable) {
      const values = stable.map((tokens) => resolvePointer(payload, tokens) ?? null);
      if (values.every((v) => v === null))
        return {
          ok: false,
          reason: "event_id_missing",
          detail: "none of the configured stableFields is present",
        };
      id = `sha256:${createHash("sha256").update(canonicalJson(values)).digest("hex")}`;
    } else {
      const raw = readId?.(input.headers, payload);
      id = idText(raw);
      if (!id) {
        const why = typeof raw === "number" ? "is not a whole number below 2^53" : "is missing or empty";
        return { ok: false, reason: "event_id_missing", detail: `the event id (${idSource}) ${why}` };
      }
    }
    const type = stringField(readType(input.headers, payload));
    if (!type)
      return { ok: false, reason: "event_type_missing", detail: "the event type is missing or empty" };
    const version = versionOf(readVersion?.(input.headers, payload));
    const entityType = options.entityType ?? stringField(readEntityType?.(input.headers, payload));
    const entityId = idText(readEntityId?.(input.headers, payload));
    const entity: EntityRef | undefined =
      entityType && entityId && version
        ? { type: entityType, id: entityId, version: version.version }
        : undefined;
    return {
      ok: true,
      secretIndex,
      event: {
        dedupeKey: id,
        type,
        payload,
        payloadIsBody: true,
        dedupeOnBodyHash,
        ...(version?.date && { occurredAt: new Date(version.version) }),
        ...(entity && { entity }),
      },
    };
  };
}
