import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { NodeRuntime, Webhooks } from "@paddle/paddle-node-sdk";
import { paddleProvider } from "hookledger";
import type { HeaderBag, VerifyResult } from "hookledger";

// The SDK exposes verification only (`Webhooks.isSignatureValid`; `unmarshal` also builds typed entities, which
// needs complete payloads), against the real clock; there is no signing helper. So headers are signed here with node:crypto as developer.paddle.com describes, and the SDK is
// asked to accept what we accept and to refuse what we refuse.
NodeRuntime.initialize();
const sdk = new Webhooks();

const SECRET = "pdl_ntfset_01hv8x_current";
const OLD_SECRET = "pdl_ntfset_01hv8x_old";
const NOW = Date.UTC(2026, 0, 1);
const T = NOW / 1000;

const event = {
  event_id: "evt_01hv8x2acma2gz3he1k1ajddzt",
  event_type: "subscription.updated",
  occurred_at: "2025-12-31T23:59:58.621022Z",
  notification_id: "ntf_01hv8x2af5q3vfk4d1m5f4h6z3",
  data: { id: "sub_01hv8x29kz0t586xy6zn1a62ny", status: "active", note: "café ☃" },
};
const PAYLOAD = `${JSON.stringify(event, null, 2)}\n`;

const mac = (ts: number, payload = PAYLOAD, secret = SECRET) =>
  createHmac("sha256", secret).update(`${ts}:${payload}`).digest("hex");

function signature(ts = T, payload = PAYLOAD, secrets: readonly string[] = [SECRET]): string {
  return [`ts=${ts}`, ...secrets.map((s) => `h1=${mac(ts, payload, s)}`)].join(";");
}

function verify(
  header: string | null,
  { payload = PAYLOAD, secrets = [SECRET], now = NOW, options = {} } = {},
) {
  const headers = new Headers(header === null ? {} : { "Paddle-Signature": header });
  return paddleProvider(options).verify({ body: new TextEncoder().encode(payload), headers, secrets, now });
}

const reason = (result: VerifyResult) => (result.ok ? "ok" : result.reason);

test("verify(paddle) accepts {ts}:{raw} signed as hex HMAC-SHA256 and parses id, type, time and entity", () => {
  const ms = Date.parse(event.occurred_at);
  assert.deepEqual(verify(signature()), {
    ok: true,
    secretIndex: 0,
    event: {
      dedupeKey: event.event_id,
      type: "subscription.updated",
      payload: event,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      occurredAt: new Date(ms),
      entity: { type: "subscription", id: event.data.id, version: ms },
    },
  });
});

test("verify(paddle) and the Paddle SDK agree: both accept our signature and both refuse a forged one", async () => {
  const now = Date.now();
  const ts = Math.floor(now / 1000);
  const good = signature(ts);
  assert.equal(await sdk.isSignatureValid(PAYLOAD, SECRET, good), true);
  assert.equal(reason(verify(good, { now })), "ok");

  const forged = signature(ts, PAYLOAD, ["attacker"]);
  assert.equal(await sdk.isSignatureValid(PAYLOAD, SECRET, forged), false);
  assert.equal(reason(verify(forged, { now })), "signature_mismatch");
  const tampered = PAYLOAD.replace("active", "paused");
  assert.equal(await sdk.isSignatureValid(tampered, SECRET, good), false);
  assert.equal(reason(verify(good, { now, payload: tampered })), "signature_mismatch");
});

test("verify(paddle) accepts any of several h1 values (rotation) and reports the matching secret", () => {
  const both = signature(T, PAYLOAD, [OLD_SECRET, SECRET]);
  const result = verify(both, { secrets: [SECRET] });
  assert.equal(result.ok && result.secretIndex, 0);
  const rotated = verify(signature(T, PAYLOAD, [OLD_SECRET]), { secrets: [SECRET, OLD_SECRET] });
  assert.equal(rotated.ok && rotated.secretIndex, 1);
  assert.equal(reason(verify(signature(T, PAYLOAD, [OLD_SECRET]))), "signature_mismatch");
});

test("verify(paddle) rejects a timestamp 6 s old or 6 s ahead, and accepts 5 s either way", () => {
  assert.equal(reason(verify(signature(T - 6))), "timestamp_outside_window");
  assert.equal(reason(verify(signature(T + 6))), "timestamp_outside_window");
  assert.equal(reason(verify(signature(T - 5))), "ok");
  assert.equal(reason(verify(signature(T + 5))), "ok");
});

test("verify(paddle) honours toleranceSeconds", () => {
  const options = { toleranceSeconds: 60 };
  assert.equal(reason(verify(signature(T - 59), { options })), "ok");
  assert.equal(reason(verify(signature(T - 61), { options })), "timestamp_outside_window");
});

test("verify(paddle) checks the signature before the window, so a stale forgery is signature_mismatch", () => {
  assert.equal(reason(verify(signature(T - 600, PAYLOAD, ["attacker"]))), "signature_mismatch");
});

test("verify(paddle) rejects a moved timestamp: ts is signed", () => {
  assert.equal(reason(verify(`ts=${T - 1};h1=${mac(T)}`)), "signature_mismatch");
});

test("verify(paddle) rejects a tampered body", () => {
  assert.equal(
    reason(verify(signature(), { payload: PAYLOAD.replace("active", "paused") })),
    "signature_mismatch",
  );
});

test("verify(paddle) rejects a prefix of the right signature and one of the wrong length", () => {
  const h1 = mac(T);
  assert.equal(reason(verify(`ts=${T};h1=${h1.slice(0, 32)}`)), "signature_mismatch");
  assert.equal(reason(verify(`ts=${T};h1=${h1}00`)), "signature_mismatch");
  assert.equal(reason(verify(`ts=${T};h1=${h1}0`)), "signature_malformed");
});

test("verify(paddle) rejects missing parts: header, ts, h1; and two ts values", () => {
  assert.equal(reason(verify(null)), "signature_missing");
  assert.equal(reason(verify(`h1=${mac(T)}`)), "timestamp_missing");
  assert.equal(reason(verify(`ts=${T}`)), "signature_malformed");
  assert.equal(reason(verify(`ts=${T};ts=${T};h1=${mac(T)}`)), "timestamp_missing");
  assert.equal(reason(verify(`ts=${T},h1=${mac(T)}`)), "timestamp_missing");
});

test("verify(paddle) rejects a verified body without event_id or event_type, or not JSON", () => {
  for (const [body, expected] of [
    [{ event_type: "x.y" }, "event_id_missing"],
    [{ event_id: "evt_1" }, "event_type_missing"],
  ] as const) {
    const payload = JSON.stringify(body);
    assert.equal(reason(verify(signature(T, payload), { payload })), expected);
  }
  assert.equal(reason(verify(signature(T, "not json"), { payload: "not json" })), "body_not_json");
});

test("verify(paddle) leaves out the entity without data.id or a parsable occurred_at", () => {
  for (const body of [
    { event_id: "evt_1", event_type: "subscription.updated", occurred_at: event.occurred_at },
    { event_id: "evt_1", event_type: "subscription.updated", data: { id: "sub_1" }, occurred_at: "soon" },
    { event_id: "evt_1", event_type: "ping", data: { id: "x" }, occurred_at: event.occurred_at },
  ]) {
    const payload = JSON.stringify(body);
    const result = verify(signature(T, payload), { payload });
    assert.ok(result.ok && "event" in result, payload);
    assert.equal(result.event.entity, undefined, payload);
  }
});

test("verify(paddle) never throws on garbage in the header", () => {
  const garbage = [
    "",
    ";",
    "=",
    "ts=",
    "h1=",
    "ts=;h1=",
    "ts=x;h1=zz",
    "\u00ff",
    "a".repeat(100_000),
    "ts=-1;h1=00",
  ];
  for (const value of garbage) assert.equal(verify(value).ok, false, value.slice(0, 40));
  const exotic: HeaderBag = { get: () => "ts=\u2603;h1=\u0000", forEach: () => undefined };
  const result = paddleProvider().verify({
    body: new Uint8Array(),
    headers: exotic,
    secrets: [SECRET],
    now: NOW,
  });
  assert.equal(result.ok, false);
});
