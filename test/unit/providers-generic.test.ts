import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";
import { type GenericOptions, genericProvider } from "hookledger";
import { canonicalJson, parsePointer, resolvePointer } from "../../src/providers/json-pointer.js";
import type { HeaderBag, VerifyResult } from "hookledger";

// A generic source has no SDK of its own; node:crypto signs each configured variant, and the Standard Webhooks
// reference library signs one configuration that mimics it, to show the template reproduces a real scheme.
const SECRET = "generic-secret-current";
const OLD_SECRET = "generic-secret-old";
const NOW = Date.UTC(2026, 0, 1);
const T = NOW / 1000;

const body = {
  id: "evt_1",
  type: "order.updated",
  data: { id: "ord_1", object: "order", updated_at: "2025-12-31T23:59:00.000Z", revision: 7, tags: ["a/b"] },
};
const PAYLOAD = JSON.stringify(body);

const BASE: GenericOptions = {
  signatureHeader: "x-signature",
  algorithm: "sha256",
  encoding: "hex",
  idPointer: "/id",
  typePointer: "/type",
};

interface Signing {
  payload?: string;
  secret?: string;
  algorithm?: "sha256" | "sha512";
  encoding?: "hex" | "base64";
  signed?: (payload: string) => string;
}

const mac = ({
  payload = PAYLOAD,
  secret = SECRET,
  algorithm = "sha256",
  encoding = "hex",
  signed,
}: Signing = {}) =>
  createHmac(algorithm, secret)
    .update(signed ? signed(payload) : payload)
    .digest(encoding);

function verify(
  options: GenericOptions,
  headers: Record<string, string>,
  { payload = PAYLOAD, secrets = [SECRET], now = NOW } = {},
): VerifyResult {
  return genericProvider(options).verify({
    body: new TextEncoder().encode(payload),
    headers: new Headers(headers),
    secrets,
    now,
  });
}

const reason = (result: VerifyResult) => (result.ok ? "ok" : result.reason);
const eventOf = (result: VerifyResult) => {
  assert.ok(result.ok && "event" in result, JSON.stringify(result));
  return result.event;
};

test("verify(generic) accepts the hex HMAC of the body and reads id and type by pointer, signed: no body hash", () => {
  const event = eventOf(verify(BASE, { "x-signature": mac() }));
  assert.deepEqual(event, {
    dedupeKey: "evt_1",
    type: "order.updated",
    payload: body,
    payloadIsBody: true,
    dedupeOnBodyHash: false,
  });
});

test("verify(generic) accepts a prefix, sha512 and base64, and refuses a missing or other prefix", () => {
  const options: GenericOptions = { ...BASE, prefix: "sha512=", algorithm: "sha512", encoding: "base64" };
  const sig = `sha512=${mac({ algorithm: "sha512", encoding: "base64" })}`;
  assert.equal(reason(verify(options, { "x-signature": sig })), "ok");
  assert.equal(reason(verify(options, { "x-signature": sig.slice(7) })), "signature_malformed");
  assert.equal(reason(verify(options, { "x-signature": `sha256=${sig.slice(7)}` })), "signature_malformed");
});

test("verify(generic) with timestampHeader signs {timestamp}.{body} and enforces a symmetric window", () => {
  const options: GenericOptions = { ...BASE, timestampHeader: "x-timestamp" };
  const at = (t: number, signedT = t) => ({
    "x-timestamp": String(t),
    "x-signature": mac({ signed: (p) => `${signedT}.${p}` }),
  });
  assert.equal(reason(verify(options, at(T))), "ok");
  assert.equal(reason(verify(options, at(T - 301))), "timestamp_outside_window");
  assert.equal(reason(verify(options, at(T + 301))), "timestamp_outside_window");
  assert.equal(reason(verify(options, at(T - 300))), "ok");
  assert.equal(reason(verify(options, at(T - 1, T))), "signature_mismatch");
  assert.equal(reason(verify({ ...options, toleranceSeconds: 30 }, at(T - 31))), "timestamp_outside_window");
  assert.equal(reason(verify(options, { "x-signature": at(T)["x-signature"] })), "timestamp_missing");
});

test("verify(generic) reproduces Standard Webhooks through signedTemplate and {header:Name}", () => {
  // Standard Webhooks keys are base64; one that decodes to ASCII text is the same HMAC key as that text.
  const signature = new Webhook(Buffer.from(SECRET).toString("base64")).sign("msg_1", new Date(NOW), PAYLOAD);
  const options: GenericOptions = {
    signatureHeader: "webhook-signature",
    algorithm: "sha256",
    encoding: "base64",
    prefix: "v1,",
    timestampHeader: "webhook-timestamp",
    signedTemplate: "{header:Webhook-Id}.{timestamp}.{body}",
    idHeader: "webhook-id",
    typePointer: "/type",
  };
  const headers = { "webhook-id": "msg_1", "webhook-timestamp": String(T), "webhook-signature": signature };
  const event = eventOf(verify(options, headers));
  assert.equal(event.dedupeKey, "msg_1");
  assert.equal(event.dedupeOnBodyHash, false, "the id header is signed through {header:Webhook-Id}");
  assert.equal(reason(verify(options, { ...headers, "webhook-id": "msg_2" })), "signature_mismatch");
  const { "webhook-id": _, ...withoutId } = headers;
  assert.equal(reason(verify(options, withoutId)), "signature_malformed");
});

const HEADER_IDS: GenericOptions = {
  signatureHeader: "x-signature",
  algorithm: "sha256",
  encoding: "hex",
  idHeader: "x-event-id",
  typeHeader: "x-event-type",
};

test("verify(generic) with an unsigned idHeader also dedupes on the body hash", () => {
  const event = eventOf(
    verify(HEADER_IDS, { "x-signature": mac(), "x-event-id": "d-1", "x-event-type": "ping" }),
  );
  assert.equal(event.dedupeKey, "d-1");
  assert.equal(event.type, "ping");
  assert.equal(event.dedupeOnBodyHash, true);
  assert.equal(
    reason(verify(HEADER_IDS, { "x-signature": mac(), "x-event-type": "ping" })),
    "event_id_missing",
  );
  assert.equal(
    reason(verify(HEADER_IDS, { "x-signature": mac(), "x-event-id": "d-1" })),
    "event_type_missing",
  );
});

test("verify(generic) reads a safe numeric id and refuses one JSON.parse would round", () => {
  for (const [id, expected] of [
    [42, "42"],
    ["9007199254740993", "9007199254740993"],
  ] as const) {
    const payload = JSON.stringify({ ...body, id });
    assert.equal(eventOf(verify(BASE, { "x-signature": mac({ payload }) }, { payload })).dedupeKey, expected);
  }
  for (const payload of [
    '{"id":9007199254740993,"type":"t"}',
    '{"id":1.5,"type":"t"}',
    '{"id":"","type":"t"}',
  ]) {
    const result = verify(BASE, { "x-signature": mac({ payload }) }, { payload });
    assert.equal(reason(result), "event_id_missing", payload);
  }
});

test("verify(generic) builds the entity from pointers, with a date version as occurredAt", () => {
  const options: GenericOptions = {
    ...BASE,
    entityTypePointer: "/data/object",
    entityIdPointer: "/data/id",
    versionPointer: "/data/updated_at",
  };
  const ms = Date.parse(body.data.updated_at);
  const event = eventOf(verify(options, { "x-signature": mac() }));
  assert.deepEqual(event.entity, { type: "order", id: "ord_1", version: ms });
  assert.deepEqual(event.occurredAt, new Date(ms));
  const counter = eventOf(verify({ ...options, versionPointer: "/data/revision" }, { "x-signature": mac() }));
  assert.deepEqual(counter.entity, { type: "order", id: "ord_1", version: 7 });
  assert.equal(counter.occurredAt, undefined);
  const fixed: GenericOptions = {
    ...BASE,
    entityType: "shipment",
    entityIdPointer: "/data/id",
    versionPointer: "/data/revision",
  };
  assert.equal(eventOf(verify(fixed, { "x-signature": mac() })).entity?.type, "shipment");
  const absent = eventOf(verify({ ...options, versionPointer: "/data/missing" }, { "x-signature": mac() }));
  assert.equal(absent.entity, undefined);
});

test("verify(generic) with stableFields keys by a hash of the fields, whatever the key order of the body", () => {
  const { idPointer: _, ...noId } = BASE;
  const options: GenericOptions = { ...noId, stableFields: ["/data/id", "/data/updated_at", "/type"] };
  const first = eventOf(verify(options, { "x-signature": mac() }));
  const reordered = JSON.stringify({
    data: { updated_at: body.data.updated_at, id: "ord_1" },
    type: body.type,
  });
  const second = eventOf(
    verify(options, { "x-signature": mac({ payload: reordered }) }, { payload: reordered }),
  );
  const expected = createHash("sha256")
    .update(canonicalJson(["ord_1", body.data.updated_at, body.type]))
    .digest("hex");
  assert.equal(first.dedupeKey, `sha256:${expected}`);
  assert.equal(second.dedupeKey, first.dedupeKey);
  assert.equal(first.dedupeOnBodyHash, false);
  const other = JSON.stringify({ ...body, data: { ...body.data, updated_at: "2026-01-01T00:00:00.000Z" } });
  const third = eventOf(verify(options, { "x-signature": mac({ payload: other }) }, { payload: other }));
  assert.notEqual(third.dedupeKey, first.dedupeKey);
  const none = JSON.stringify({ type: "x" });
  const options2: GenericOptions = { ...options, stableFields: ["/data/id"] };
  assert.equal(
    reason(verify(options2, { "x-signature": mac({ payload: none }) }, { payload: none })),
    "event_id_missing",
  );
});

test("verify(generic) rejects a tampered body, another secret, a prefix of the signature and a wrong length", () => {
  const good = mac();
  assert.equal(
    reason(verify(BASE, { "x-signature": good }, { payload: PAYLOAD.replace("ord_1", "ord_2") })),
    "signature_mismatch",
  );
  assert.equal(reason(verify(BASE, { "x-signature": mac({ secret: "attacker" }) })), "signature_mismatch");
  assert.equal(reason(verify(BASE, { "x-signature": good.slice(0, 32) })), "signature_mismatch");
  assert.equal(reason(verify(BASE, { "x-signature": `${good}00` })), "signature_mismatch");
  assert.equal(reason(verify(BASE, { "x-signature": `${good}0` })), "signature_malformed");
  assert.equal(reason(verify(BASE, {})), "signature_missing");
});

test("verify(generic) rejects a verified body that is not a JSON object, or lacks the type", () => {
  assert.equal(
    reason(verify(BASE, { "x-signature": mac({ payload: "[1]" }) }, { payload: "[1]" })),
    "body_not_json",
  );
  const payload = JSON.stringify({ id: "e" });
  assert.equal(reason(verify(BASE, { "x-signature": mac({ payload }) }, { payload })), "event_type_missing");
});

test("verify(generic) reports the index of whichever of two secrets matches", () => {
  const secrets = [OLD_SECRET, SECRET];
  const old = verify(BASE, { "x-signature": mac({ secret: OLD_SECRET }) }, { secrets });
  const current = verify(BASE, { "x-signature": mac() }, { secrets });
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
});

test("genericProvider throws a TypeError listing the problems of unusable options", () => {
  assert.throws(
    () => genericProvider({ ...BASE, algorithm: "md5" as "sha256", signedTemplate: "{timestamp}" }),
    (error: unknown) =>
      error instanceof TypeError && /algorithm/.test(error.message) && /signedTemplate/.test(error.message),
  );
});

test("parsePointer and resolvePointer follow RFC 6901", () => {
  assert.deepEqual(parsePointer("/data/tags/0"), ["data", "tags", "0"]);
  assert.deepEqual(parsePointer("/a~1b/c~0d"), ["a/b", "c~d"]);
  for (const bad of ["", "id", "/a~2", "/a~"]) assert.equal(parsePointer(bad), null, bad);
  assert.equal(resolvePointer(body, ["data", "tags", "0"]), "a/b");
  assert.equal(resolvePointer(body, ["data", "tags", "01"]), undefined);
  assert.equal(resolvePointer(body, ["data", "toString"]), undefined);
  assert.equal(resolvePointer({ "a/b": 1 }, parsePointer("/a~1b") ?? []), 1);
});

test("verify(generic) never throws on garbage in the headers", () => {
  const timed: GenericOptions = {
    ...BASE,
    timestampHeader: "x-ts",
    signedTemplate: "{timestamp}:{header:x-id}:{body}",
  };
  const garbage = ["", " ", "=", "zz", "\u00ff", "a".repeat(100_000), "====", "-1", "sha256="];
  for (const value of garbage) {
    for (const options of [BASE, { ...BASE, encoding: "base64" } as GenericOptions, timed]) {
      const headers = { "x-signature": value, "x-ts": value, "x-id": value };
      assert.equal(verify(options, headers).ok, false, value.slice(0, 40));
    }
  }
  const exotic: HeaderBag = { get: () => "\u2603\u0000", forEach: () => undefined };
  const result = genericProvider(timed).verify({
    body: new Uint8Array(),
    headers: exotic,
    secrets: [SECRET],
    now: NOW,
  });
  assert.equal(result.ok, false);
});
