import { isUtf8 } from "node:buffer";
import { createHash } from "node:crypto";
import type { ParsedEvent } from "../providers/types.js";

/**
 * The longest key kept as it is, in UTF-8 bytes. A btree entry holds at most about 2.7 KB; the primary keys pair the
 * key with the source (`events`, `duplicates`, `tombstones`) or the entity type (`entity_versions`), so each part
 * stays well under half of it. Real provider ids are under 100 bytes.
 */
export const MAX_KEY_BYTES = 1024;

// Earliest instant a timestamptz holds is 4714-11-24 BC; a year of margin keeps any local-time rendering inside.
const MIN_TIME_MS = Date.UTC(-4712, 0, 1);
// JSON.stringify writes NUL as \u0000 and a lone surrogate as \ud800 … \udfff (well-formed JSON.stringify): jsonb
// refuses both. A string holding a literal backslash-u also matches; it only takes the slower, exact path.
const UNSTORABLE_ESCAPE = /\\u0000|\\ud[89a-f]/;
// A high surrogate not followed by a low one, or a low one not preceded by a high one (code units, no `u` flag).
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const UNSTORABLE_CHAR = /\0|[\ud800-\udfff]/;

/**
 * Text a Postgres `text` or `jsonb` column holds: NUL and lone surrogates become U+FFFD.
 *
 * @example
 * storableText("a\u0000b\ud800"); // "a\ufffdb\ufffd"
 */
export function storableText(text: string): string {
  return UNSTORABLE_CHAR.test(text)
    ? text.replaceAll("\0", "\ufffd").replace(LONE_SURROGATE, "\ufffd")
    : text;
}

/**
 * A key the ledger can index, as it is when it can be, else `sha256:` and the hex sha256 of the key written as a
 * JSON string (lossless, so two keys never share a hash the way two U+FFFD replacements would). Deterministic: a
 * retry of the same event lands on the same key and is a duplicate. A key already hashed is kept.
 *
 * @example
 * storableKey("evt_1"); // "evt_1"
 * storableKey("x".repeat(3000)); // "sha256:…"
 */
export function storableKey(key: string): string {
  if (storableText(key) === key && Buffer.byteLength(key, "utf8") <= MAX_KEY_BYTES) return key;
  return `sha256:${createHash("sha256").update(JSON.stringify(key)).digest("hex")}`;
}

/**
 * A time a `timestamptz` holds, or `undefined` (an invalid Date, or earlier than 4713 BC).
 *
 * @example
 * storableTime(new Date(1e23)); // undefined: Stripe `created` 1e20 is no date
 */
export function storableTime(time: Date | undefined): Date | undefined {
  if (!(time instanceof Date)) return undefined;
  const ms = time.getTime();
  return Number.isNaN(ms) || ms < MIN_TIME_MS ? undefined : time;
}

/**
 * The payload as jsonb text. Postgres jsonb cannot hold U+0000 or a lone surrogate, which JSON allows: in keys and
 * strings both become U+FFFD (the raw body keeps them, byte-exact), so a verified event is never refused for them.
 *
 * @example
 * storablePayloadJson({ "a\u0000": "\ud800" }); // '{"a\ufffd":"\ufffd"}'
 */
export function storablePayloadJson(payload: unknown): string {
  const json = JSON.stringify(payload);
  if (json === undefined || !UNSTORABLE_ESCAPE.test(json)) return json;
  return JSON.stringify(payload, (_, value: unknown) => {
    if (typeof value === "string") return storableText(value);
    if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
    // fromEntries defines own properties, so a `__proto__` key stays a key.
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storableText(k), v]));
  });
}

// The escapes jsonb refuses (\u0000) or that may stand for a lone surrogate, in either case of hex digit: a body
// holding one keeps the serialised payload, whose strings storablePayloadJson repairs.
const REFUSED_ESCAPE = /\\u0000|\\u[dD][89a-fA-F]/;
const BACKSLASH_U = Buffer.from("\\u");

/**
 * Whether Postgres reads the body's bytes, as UTF-8 text, into the jsonb the ledger would store for its payload
 * (when the payload is the body parsed as JSON): valid UTF-8 with no byte order mark (which jsonb refuses), and no
 * escape jsonb refuses or that may encode a lone surrogate. Numbers are the one difference: jsonb keeps them as
 * written (`1.50`, an integer past 2^53), where the serialised payload holds JavaScript's rendering of them
 * (docs/architecture.md, "The payload is read from the body").
 *
 * @example
 * jsonbReadsBody(Buffer.from('{"id":"evt_1"}')); // true
 * jsonbReadsBody(Buffer.from('{"id":"\\u0000"}')); // false
 */
export function jsonbReadsBody(body: Uint8Array): boolean {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return false;
  if (!isUtf8(body)) return false;
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return bytes.indexOf(BACKSLASH_U) === -1 || !REFUSED_ESCAPE.test(bytes.toString("utf8"));
}

/**
 * An event whose every field the ledger's columns and indexes hold, and what had to change (for the log): the dedupe
 * key and entity id and type through {@link storableKey}, the type through {@link storableText}, a time outside
 * `timestamptz` dropped, an entity whose version is not a finite number dropped. The payload is made storable at
 * the claim ({@link storablePayloadJson}), silently: that costs one serialisation, not two. Idempotent.
 *
 * @example
 * const { event, changes } = storableEvent(parsed);
 * if (changes.length > 0) log.warn({ changes }, "made storable");
 */
export function storableEvent(event: ParsedEvent): { event: ParsedEvent; changes: string[] } {
  const changes: string[] = [];
  const dedupeKey = storableKey(event.dedupeKey);
  if (dedupeKey !== event.dedupeKey) changes.push("dedupe key hashed (over-long, NUL or a lone surrogate)");
  const type = storableText(event.type);
  if (type !== event.type) changes.push("type: NUL or lone surrogates replaced with U+FFFD");
  const occurredAt = storableTime(event.occurredAt);
  if (event.occurredAt !== undefined && occurredAt === undefined)
    changes.push("occurred_at dropped (not a date Postgres can hold)");
  let entity = event.entity;
  if (entity && !Number.isFinite(entity.version)) {
    changes.push("entity dropped (its version is not a finite number)");
    entity = undefined;
  } else if (entity) {
    const stored = { type: storableKey(entity.type), id: storableKey(entity.id), version: entity.version };
    if (stored.type !== entity.type || stored.id !== entity.id) {
      changes.push("entity key hashed (over-long, NUL or a lone surrogate)");
      entity = stored;
    }
  }
  if (changes.length === 0) return { event, changes };
  const { occurredAt: _time, entity: _entity, ...rest } = event;
  return {
    event: {
      ...rest,
      dedupeKey,
      type,
      ...(occurredAt !== undefined && { occurredAt }),
      ...(entity !== undefined && { entity }),
    },
    changes,
  };
}
