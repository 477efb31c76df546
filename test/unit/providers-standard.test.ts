import assert from "node:assert/strict";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";
import { standardProvider, standardSecretKey } from "../../src/providers/standard.js";
import type { HeaderBag, VerifyResult } from "hookledger";

// Secrets are base64 after `whsec_`, as the standard requires; these two are 24 random-looking bytes each.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const NOW = Date.UTC(2026, 0, 1);
const T = NOW / 1000;
const MSG_ID = "msg_2a7Rk1q8wJbV3mNcX0pLzQ";

const headersOf = (obj: Record<string, string>) => new Headers(obj);

const invoicePaid = {
  type: "invoice.paid",
  timestamp: "2025-12-31T23:59:58.250Z",
  data: { id: "in_1", total: 4200 },
};
const PAYLOAD = JSON.stringify(invoicePaid);

function signature(payload = PAYLOAD, secret = SECRET, timestamp = T, id = MSG_ID): string {
  return new Webhook(secret).sign(id, new Date(timestamp * 1000), payload);
}

function headersFor(
  overrides: Record<string, string | null> = {},
  payload = PAYLOAD,
  secret = SECRET,
): Headers {
  const all: Record<string, string | null> = {
    "webhook-id": MSG_ID,
    "webhook-timestamp": String(T),
    "webhook-signature": signature(payload, secret),
    ...overrides,
  };
  return headersOf(
    Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null)),
  );
}

function verify(headers: HeaderBag, payload = PAYLOAD, secrets = [SECRET], now = NOW): VerifyResult {
  return standardProvider().verify({ body: new TextEncoder().encode(payload), headers, secrets, now });
}

const reason = (result: VerifyResult) => (result.ok ? "ok" : result.reason);

test("sign(standardwebhooks) reproduces the Standard Webhooks test vector", () => {
  // The vector of the reference libraries' "sign function" tests (e.g. svix's PHP testSignFunctionWorks), which the
  // installed `standardwebhooks` also reproduces.
  const signed = new Webhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").sign(
    "msg_p5jXN8AQM9LWM0D4loKWxJek",
    new Date(1614265330 * 1000),
    '{"test": 2432232314}',
  );
  assert.equal(signed, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
});

test("verify(standard) verifies the Standard Webhooks test vector, then refuses it as event_type_missing", () => {
  const headers = headersOf({
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  });
  const result = verify(
    headers,
    '{"test": 2432232314}',
    ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    1614265330_000,
  );
  assert.deepEqual(result, { ok: false, reason: "event_type_missing", detail: "the event has no `type`" });
});

test("verify(standard) accepts a delivery signed by standardwebhooks and parses id, type, time and entity", () => {
  const ms = Date.parse(invoicePaid.timestamp);
  assert.deepEqual(verify(headersFor()), {
    ok: true,
    secretIndex: 0,
    event: {
      dedupeKey: MSG_ID,
      type: "invoice.paid",
      payload: invoicePaid,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      occurredAt: new Date(ms),
      entity: { type: "invoice", id: "in_1", version: ms },
    },
  });
});

test("verify(standard) leaves out the entity without a typed prefix, a data.id or a parsable timestamp", () => {
  const payloads = [
    { type: "ping", timestamp: invoicePaid.timestamp, data: { id: "in_1" } },
    { type: ".paid", timestamp: invoicePaid.timestamp, data: { id: "in_1" } },
    { type: "invoice.paid", timestamp: invoicePaid.timestamp, data: { id: 1 } },
    { type: "invoice.paid", timestamp: invoicePaid.timestamp, data: "in_1" },
    { type: "invoice.paid", timestamp: "yesterday", data: { id: "in_1" } },
    { type: "invoice.paid", data: { id: "in_1" } },
  ];
  for (const body of payloads) {
    const payload = JSON.stringify(body);
    const result = verify(headersFor({}, payload), payload);
    assert.ok(result.ok && "event" in result, payload);
    assert.equal(result.event.entity, undefined, payload);
  }
});

test("verify(standard) accepts the Svix-branded svix-id, svix-timestamp and svix-signature", () => {
  const headers = headersOf({
    "svix-id": MSG_ID,
    "svix-timestamp": String(T),
    "svix-signature": signature(),
  });
  const result = verify(headers);
  assert.equal(result.ok && "event" in result && result.event.dedupeKey, MSG_ID);
});

test("verify(standard) accepts a list where a later v1 matches and skips v1a and unknown versions", () => {
  const right = signature().slice(3);
  const header = `v1a,${right} v2,${right} v1,${signature(PAYLOAD, OLD_SECRET).slice(3)}  v1,${right}`;
  assert.equal(reason(verify(headersFor({ "webhook-signature": header }))), "ok");
  assert.equal(reason(verify(headersFor({ "webhook-signature": `v1a,${right}` }))), "signature_malformed");
});

test("verify(standard) rejects a tampered body", () => {
  assert.equal(reason(verify(headersFor(), PAYLOAD.replace("4200", "1"))), "signature_mismatch");
});

test("verify(standard) rejects a webhook-id changed after signing", () => {
  assert.equal(reason(verify(headersFor({ "webhook-id": "msg_other" }))), "signature_mismatch");
});

test("verify(standard) rejects a signature made with another secret", () => {
  assert.equal(
    reason(verify(headersFor({}, PAYLOAD, "whsec_YXR0YWNrZXJhdHRhY2tlcg=="))),
    "signature_mismatch",
  );
});

test("verify(standard) rejects a prefix of the right signature", () => {
  const truncated = signature().slice(0, 3 + 24);
  assert.equal(reason(verify(headersFor({ "webhook-signature": truncated }))), "signature_malformed");
});

test("verify(standard) rejects a signature of the wrong length", () => {
  const long = `${signature().slice(0, -1)}AAAA`; // 44 chars minus "=" plus 4: 35 bytes
  assert.equal(reason(verify(headersFor({ "webhook-signature": long }))), "signature_malformed");
  const unpadded = signature().slice(0, -1);
  assert.equal(reason(verify(headersFor({ "webhook-signature": unpadded }))), "signature_malformed");
});

test("verify(standard) rejects a missing webhook-signature as signature_missing", () => {
  assert.equal(reason(verify(headersFor({ "webhook-signature": null }))), "signature_missing");
});

test("verify(standard) rejects a missing webhook-timestamp as timestamp_missing", () => {
  assert.equal(reason(verify(headersFor({ "webhook-timestamp": null }))), "timestamp_missing");
  assert.equal(reason(verify(headersFor({ "webhook-timestamp": `${T}.0` }))), "timestamp_missing");
});

test("verify(standard) rejects a missing webhook-id as signature_malformed: the id is part of the signed string", () => {
  assert.equal(reason(verify(headersFor({ "webhook-id": null }))), "signature_malformed");
});

test("verify(standard) rejects a timestamp 301 s old", () => {
  const headers = headersFor({
    "webhook-timestamp": String(T - 301),
    "webhook-signature": signature(PAYLOAD, SECRET, T - 301),
  });
  assert.equal(reason(verify(headers)), "timestamp_outside_window");
});

test("verify(standard) rejects a timestamp 301 s ahead", () => {
  const headers = headersFor({
    "webhook-timestamp": String(T + 301),
    "webhook-signature": signature(PAYLOAD, SECRET, T + 301),
  });
  assert.equal(reason(verify(headers)), "timestamp_outside_window");
});

test("verify(standard) accepts a timestamp 299 s old or 299 s ahead", () => {
  for (const t of [T - 299, T + 299]) {
    const headers = headersFor({
      "webhook-timestamp": String(t),
      "webhook-signature": signature(PAYLOAD, SECRET, t),
    });
    assert.equal(reason(verify(headers)), "ok", String(t - T));
  }
});

test("verify(standard) honours toleranceSeconds", () => {
  const t = T - 61;
  const headers = headersFor({
    "webhook-timestamp": String(t),
    "webhook-signature": signature(PAYLOAD, SECRET, t),
  });
  const result = standardProvider({ toleranceSeconds: 60 }).verify({
    body: new TextEncoder().encode(PAYLOAD),
    headers,
    secrets: [SECRET],
    now: NOW,
  });
  assert.equal(reason(result), "timestamp_outside_window");
});

test("verify(standard) reports the index of whichever of two secrets matches", () => {
  const both = [OLD_SECRET, SECRET];
  const old = verify(headersFor({}, PAYLOAD, OLD_SECRET), PAYLOAD, both);
  const current = verify(headersFor({}, PAYLOAD, SECRET), PAYLOAD, both);
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
});

test("verify(standard) rejects a secret removed from the list", () => {
  assert.equal(reason(verify(headersFor({}, PAYLOAD, OLD_SECRET), PAYLOAD, [SECRET])), "signature_mismatch");
});

test("verify(standard) accepts a secret without the whsec_ prefix and skips one that is not base64", () => {
  const result = verify(headersFor(), PAYLOAD, ["not base64!", "", "whsec_", SECRET.slice("whsec_".length)]);
  assert.equal(result.ok && result.secretIndex, 3);
});

test("standardSecretKey decodes base64 after an optional whsec_ and refuses anything else", () => {
  assert.equal(standardSecretKey(SECRET)?.length, 24);
  assert.deepEqual(standardSecretKey(SECRET), standardSecretKey(SECRET.slice("whsec_".length)));
  for (const bad of ["", "whsec_", "not base64!", "whsec_abc", "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]) {
    assert.equal(standardSecretKey(bad), null, bad);
  }
});

test("verify(standard) never throws on garbage in the headers", () => {
  const garbage = [
    "",
    " ",
    ",",
    "v1,",
    "v1",
    "v1,,",
    "v1,====",
    "v1,@@@@",
    `v1,${"A".repeat(100_000)}`,
    "  v1 , x  ",
  ];
  // A throw fails the test by itself; each answer must also be a refusal.
  for (const value of garbage) {
    assert.equal(verify(headersFor({ "webhook-signature": value })).ok, false, value.slice(0, 40));
    assert.equal(verify(headersFor({ "webhook-timestamp": value })).ok, false, value.slice(0, 40));
    assert.equal(verify(headersFor({ "webhook-id": value })).ok, false, value.slice(0, 40));
  }
  // Values a Web Headers would refuse, through a hand-made HeaderBag.
  const exotic: HeaderBag = {
    get: (name) => (name.endsWith("timestamp") ? String(T) : "v1,\u2603\u0000"),
    forEach: () => undefined,
  };
  assert.equal(verify(exotic).ok, false);
});
