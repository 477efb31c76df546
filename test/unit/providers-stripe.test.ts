import assert from "node:assert/strict";
import { test } from "node:test";
import Stripe from "stripe";
import { stripeProvider } from "hookledger";
import type { HeaderBag, VerifyResult } from "hookledger";

const stripe = new Stripe("sk_test_x");
const SECRET = "whsec_test_current";
const OLD_SECRET = "whsec_test_old";
const NOW = Date.UTC(2026, 0, 1); // ms; every test passes it explicitly
const T = NOW / 1000;

const headersOf = (obj: Record<string, string>) => new Headers(obj);

const event = {
  id: "evt_1",
  object: "event",
  type: "customer.subscription.updated",
  created: T - 5,
  data: { object: { id: "sub_1", object: "subscription", status: "active" } },
};
const PAYLOAD = JSON.stringify(event);

function sign(payload = PAYLOAD, secret = SECRET, timestamp = T): string {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

function verify(options: {
  payload?: string;
  header?: string | null;
  headers?: HeaderBag;
  secrets?: string[];
  now?: number;
}): VerifyResult {
  const header = options.header === undefined ? sign() : options.header;
  return stripeProvider().verify({
    body: new TextEncoder().encode(options.payload ?? PAYLOAD),
    headers: options.headers ?? headersOf(header === null ? {} : { "Stripe-Signature": header }),
    secrets: options.secrets ?? [SECRET],
    now: options.now ?? NOW,
  });
}

function v1Of(header: string): string {
  const v1 = header.split(",").find((item) => item.startsWith("v1="));
  assert.ok(v1);
  return v1.slice(3);
}

test("verify(stripe) accepts a header from stripe's generateTestHeaderString and parses the event", () => {
  const result = verify({});
  assert.deepEqual(result, {
    ok: true,
    secretIndex: 0,
    event: {
      dedupeKey: "evt_1",
      type: "customer.subscription.updated",
      payload: event,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      occurredAt: new Date((T - 5) * 1000),
      entity: { type: "subscription", id: "sub_1", version: T - 5 },
    },
  });
});

test("verify(stripe) rejects a tampered body", () => {
  const result = verify({ payload: PAYLOAD.replace("active", "canceled") });
  assert.deepEqual(result, { ok: false, reason: "signature_mismatch" });
});

test("verify(stripe) rejects a signature made with another secret", () => {
  assert.deepEqual(verify({ header: sign(PAYLOAD, "whsec_attacker") }), {
    ok: false,
    reason: "signature_mismatch",
  });
});

test("verify(stripe) rejects a prefix of the right signature", () => {
  const truncated = `t=${T},v1=${v1Of(sign()).slice(0, 32)}`;
  assert.deepEqual(verify({ header: truncated }), { ok: false, reason: "signature_mismatch" });
});

test("verify(stripe) rejects a signature of the wrong length", () => {
  assert.deepEqual(verify({ header: `t=${T},v1=${v1Of(sign())}00` }), {
    ok: false,
    reason: "signature_mismatch",
  });
  assert.deepEqual(verify({ header: `t=${T},v1=${v1Of(sign())}0` }), {
    ok: false,
    reason: "signature_mismatch",
  });
});

test("verify(stripe) rejects a missing Stripe-Signature header as signature_missing", () => {
  assert.deepEqual(verify({ header: null }), { ok: false, reason: "signature_missing" });
});

test("verify(stripe) rejects a header without t= as timestamp_missing", () => {
  assert.deepEqual(verify({ header: `v1=${v1Of(sign())}` }), { ok: false, reason: "timestamp_missing" });
});

test("verify(stripe) rejects a header without v1= as signature_malformed, ignoring v0", () => {
  assert.deepEqual(verify({ header: `t=${T}` }), { ok: false, reason: "signature_malformed" });
  assert.deepEqual(verify({ header: `t=${T},v0=${v1Of(sign())}` }), {
    ok: false,
    reason: "signature_malformed",
  });
});

test("verify(stripe) rejects a timestamp 301 s old", () => {
  const result = verify({ header: sign(PAYLOAD, SECRET, T - 301) });
  assert.deepEqual(result, { ok: false, reason: "timestamp_outside_window" });
});

test("verify(stripe) rejects a timestamp 301 s ahead", () => {
  const result = verify({ header: sign(PAYLOAD, SECRET, T + 301) });
  assert.deepEqual(result, { ok: false, reason: "timestamp_outside_window" });
});

test("verify(stripe) accepts a timestamp 299 s old or 299 s ahead", () => {
  assert.equal(verify({ header: sign(PAYLOAD, SECRET, T - 299) }).ok, true);
  assert.equal(verify({ header: sign(PAYLOAD, SECRET, T + 299) }).ok, true);
});

test("verify(stripe) honours toleranceSeconds", () => {
  const result = stripeProvider({ toleranceSeconds: 600 }).verify({
    body: new TextEncoder().encode(PAYLOAD),
    headers: headersOf({ "Stripe-Signature": sign(PAYLOAD, SECRET, T - 599) }),
    secrets: [SECRET],
    now: NOW,
  });
  assert.equal(result.ok, true);
});

test("verify(stripe) reports the index of whichever of two secrets matches", () => {
  const both = [OLD_SECRET, SECRET];
  const old = verify({ header: sign(PAYLOAD, OLD_SECRET), secrets: both });
  const current = verify({ header: sign(PAYLOAD, SECRET), secrets: both });
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
});

test("verify(stripe) rejects a secret removed from the list", () => {
  assert.deepEqual(verify({ header: sign(PAYLOAD, OLD_SECRET), secrets: [SECRET] }), {
    ok: false,
    reason: "signature_mismatch",
  });
});

test("verify(stripe) accepts a header with two v1 values where the second matches", () => {
  const header = `t=${T},v1=${v1Of(sign(PAYLOAD, "whsec_other"))},v1=${v1Of(sign())}`;
  const result = verify({ header });
  assert.equal(result.ok && result.secretIndex, 0);
});

test("verify(stripe) answers body_not_json, event_id_missing, event_type_missing after the signature verified", () => {
  const cases: [string, string][] = [
    ["not json", "body_not_json"],
    ["[1,2]", "body_not_json"],
    [JSON.stringify({ type: "x" }), "event_id_missing"],
    [JSON.stringify({ id: "evt_2" }), "event_type_missing"],
  ];
  for (const [payload, reason] of cases) {
    const result = verify({ payload, header: sign(payload) });
    assert.equal(!result.ok && result.reason, reason, payload);
  }
});

test("verify(stripe) parses an event without data.object or created, leaving out entity and occurredAt", () => {
  const payload = JSON.stringify({ id: "evt_3", type: "ping", data: null });
  const result = verify({ payload, header: sign(payload) });
  assert.ok(result.ok && "event" in result);
  assert.equal(result.event.entity, undefined);
  assert.equal(result.event.occurredAt, undefined);
});

test("verify(stripe) never throws on garbage in the header", () => {
  const v1 = v1Of(sign());
  const garbage = [
    "",
    " ",
    ",,,",
    "=",
    "t",
    "t=",
    "v1=",
    "t=,v1=",
    "t=abc,v1=zz",
    `t=-${T},v1=${v1}`,
    `t=${T}.5,v1=${v1}`,
    `t=1e9,v1=${v1}`,
    `t=${"9".repeat(400)},v1=${v1}`,
    `t=${T},v1=${"g".repeat(64)}`,
    `t=${T},v1=${"a".repeat(100_000)}`,
    `t=${T}=1,v1=${v1}=`,
    `t=${T},v1`,
    "\u00ff\u00fe",
  ];
  // A throw fails the test by itself; each answer must also be a refusal.
  for (const header of garbage) assert.equal(verify({ header }).ok, false, header.slice(0, 40));
  // Values a Web Headers would refuse, through a hand-made HeaderBag.
  const exotic: HeaderBag = {
    get: (name) => (name === "stripe-signature" ? "t=\u2603,v1=\u0000" : null),
    forEach: () => undefined,
  };
  assert.equal(verify({ headers: exotic }).ok, false);
});
