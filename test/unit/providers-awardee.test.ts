import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { type AwardeeOptions, awardeeProvider } from "hookledger";
import type { HeaderBag, VerifyResult } from "hookledger";

// Awardee publishes no SDK and no signature scheme, so the tests sign with node:crypto for each configured variant.
const SECRET = "awardee-secret-current";
const OLD_SECRET = "awardee-secret-old";
const NOW = Date.UTC(2026, 0, 1);
const T = NOW / 1000;
const DELIVERY = "dlv_0001";

const headersOf = (obj: Record<string, string>) => new Headers(obj);

const awarded = { id: "aw_1", timestamp: "2025-12-31T23:59:00.000Z", amount: 500 };
const PAYLOAD = JSON.stringify(awarded);

interface Signing {
  payload?: string;
  secret?: string;
  algorithm?: "sha256" | "sha512";
  encoding?: "hex" | "base64";
  prefix?: string;
  timestamp?: number;
}

function signature({ payload = PAYLOAD, secret = SECRET, ...s }: Signing = {}): string {
  const signed = s.timestamp === undefined ? payload : `${s.timestamp}.${payload}`;
  const mac = createHmac(s.algorithm ?? "sha256", secret)
    .update(signed)
    .digest(s.encoding ?? "hex");
  return `${s.prefix ?? ""}${mac}`;
}

function headersFor(overrides: Record<string, string | null> = {}, signing: Signing = {}): Headers {
  const all: Record<string, string | null> = {
    "X-Awardee-Signature": signature(signing),
    "X-Awardee-Delivery": DELIVERY,
    "X-Awardee-Event": "awardee.updated",
    ...overrides,
  };
  return headersOf(
    Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null)),
  );
}

function verify(
  headers: HeaderBag,
  { payload = PAYLOAD, secrets = [SECRET], now = NOW, options = {} as AwardeeOptions } = {},
): VerifyResult {
  return awardeeProvider(options).verify({ body: new TextEncoder().encode(payload), headers, secrets, now });
}

const reason = (result: VerifyResult) => (result.ok ? "ok" : result.reason);

const TIMED: AwardeeOptions = { timestampHeader: "x-awardee-timestamp" };
function timedHeaders(t: number, overrides: Record<string, string | null> = {}): Headers {
  return headersFor({ "X-Awardee-Timestamp": String(t), ...overrides }, { timestamp: t });
}

test("verify(awardee) accepts the default hex HMAC-SHA256 of the body and parses id, type and entity", () => {
  const ms = Date.parse(awarded.timestamp);
  assert.deepEqual(verify(headersFor()), {
    ok: true,
    secretIndex: 0,
    event: {
      dedupeKey: DELIVERY,
      type: "awardee.updated",
      payload: awarded,
      payloadIsBody: true,
      dedupeOnBodyHash: true,
      occurredAt: new Date(ms),
      entity: { type: "awardee", id: "aw_1", version: ms },
    },
  });
});

test("verify(awardee) takes a numeric version as it is, with configured fields and entity type", () => {
  const payload = JSON.stringify({ award: { id: "x" }, awardee_id: 17, revision: 42 });
  const options: AwardeeOptions = {
    versionField: "revision",
    entityIdField: "awardee_id",
    entityType: "award",
  };
  const result = verify(headersFor({}, { payload }), { payload, options });
  assert.ok(result.ok && "event" in result);
  assert.deepEqual(result.event.entity, { type: "award", id: "17", version: 42 });
  assert.equal(result.event.occurredAt, undefined);
});

test("verify(awardee) leaves out the entity without an id or a usable version", () => {
  for (const body of [{ timestamp: awarded.timestamp }, { id: "aw_1" }, { id: "aw_1", timestamp: "soon" }]) {
    const payload = JSON.stringify(body);
    const result = verify(headersFor({}, { payload }), { payload });
    assert.ok(result.ok && "event" in result, payload);
    assert.equal(result.event.entity, undefined, payload);
  }
});

test("verify(awardee) accepts a configured header, prefix, sha512 and base64", () => {
  const options: AwardeeOptions = {
    signatureHeader: "x-sig",
    prefix: "sha512=",
    algorithm: "sha512",
    encoding: "base64",
  };
  const sig = signature({ prefix: "sha512=", algorithm: "sha512", encoding: "base64" });
  assert.equal(reason(verify(headersFor({ "X-Awardee-Signature": null, "X-Sig": sig }), { options })), "ok");
  // The default header is not read once another is configured.
  assert.equal(reason(verify(headersFor(), { options })), "signature_missing");
});

test("verify(awardee) rejects a missing or different prefix as signature_malformed", () => {
  const options: AwardeeOptions = { prefix: "sha256=" };
  assert.equal(reason(verify(headersFor({}, { prefix: "sha256=" }), { options })), "ok");
  assert.equal(reason(verify(headersFor(), { options })), "signature_malformed");
  assert.equal(reason(verify(headersFor({}, { prefix: "sha1=" }), { options })), "signature_malformed");
});

test("verify(awardee) rejects a tampered body", () => {
  assert.equal(
    reason(verify(headersFor(), { payload: PAYLOAD.replace("500", "5000") })),
    "signature_mismatch",
  );
});

test("verify(awardee) rejects a signature made with another secret", () => {
  assert.equal(reason(verify(headersFor({}, { secret: "attacker" }))), "signature_mismatch");
});

test("verify(awardee) rejects a prefix of the right signature", () => {
  assert.equal(
    reason(verify(headersFor({ "X-Awardee-Signature": signature().slice(0, 32) }))),
    "signature_mismatch",
  );
});

test("verify(awardee) rejects a signature of the wrong length", () => {
  assert.equal(
    reason(verify(headersFor({ "X-Awardee-Signature": `${signature()}00` }))),
    "signature_mismatch",
  );
  assert.equal(
    reason(verify(headersFor({ "X-Awardee-Signature": `${signature()}0` }))),
    "signature_malformed",
  );
});

test("verify(awardee) rejects a missing X-Awardee-Signature as signature_missing", () => {
  assert.equal(reason(verify(headersFor({ "X-Awardee-Signature": null }))), "signature_missing");
});

test("verify(awardee) rejects a missing X-Awardee-Delivery as event_id_missing", () => {
  assert.equal(reason(verify(headersFor({ "X-Awardee-Delivery": null }))), "event_id_missing");
});

test("verify(awardee) rejects a missing X-Awardee-Event as event_type_missing", () => {
  assert.equal(reason(verify(headersFor({ "X-Awardee-Event": null }))), "event_type_missing");
});

test("verify(awardee) reports a bad signature before missing id and type headers", () => {
  const headers = headersFor({ "X-Awardee-Delivery": null, "X-Awardee-Event": null }, { secret: "attacker" });
  assert.equal(reason(verify(headers)), "signature_mismatch");
});

test("verify(awardee) rejects a body that is not a JSON object as body_not_json", () => {
  const payload = "[1]";
  assert.equal(reason(verify(headersFor({}, { payload }), { payload })), "body_not_json");
});

test("verify(awardee) with timestampHeader signs {timestamp}.{raw} and rejects a missing timestamp", () => {
  assert.equal(reason(verify(timedHeaders(T), { options: TIMED })), "ok");
  assert.equal(reason(verify(headersFor(), { options: TIMED })), "timestamp_missing");
  const moved = timedHeaders(T, { "X-Awardee-Timestamp": String(T - 1) });
  assert.equal(reason(verify(moved, { options: TIMED })), "signature_mismatch");
});

test("verify(awardee) rejects a timestamp 301 s old", () => {
  assert.equal(reason(verify(timedHeaders(T - 301), { options: TIMED })), "timestamp_outside_window");
});

test("verify(awardee) rejects a timestamp 301 s ahead", () => {
  assert.equal(reason(verify(timedHeaders(T + 301), { options: TIMED })), "timestamp_outside_window");
});

test("verify(awardee) accepts a timestamp 299 s old or 299 s ahead", () => {
  assert.equal(reason(verify(timedHeaders(T - 299), { options: TIMED })), "ok");
  assert.equal(reason(verify(timedHeaders(T + 299), { options: TIMED })), "ok");
});

test("verify(awardee) honours toleranceSeconds", () => {
  const options: AwardeeOptions = { ...TIMED, toleranceSeconds: 30 };
  assert.equal(reason(verify(timedHeaders(T - 31), { options })), "timestamp_outside_window");
});

test("verify(awardee) without timestampHeader applies no window", () => {
  assert.equal(reason(verify(headersFor(), { now: 0 })), "ok");
});

test("verify(awardee) reports the index of whichever of two secrets matches", () => {
  const secrets = [OLD_SECRET, SECRET];
  const old = verify(headersFor({}, { secret: OLD_SECRET }), { secrets });
  const current = verify(headersFor(), { secrets });
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
});

test("verify(awardee) rejects a secret removed from the list", () => {
  assert.equal(
    reason(verify(headersFor({}, { secret: OLD_SECRET }), { secrets: [SECRET] })),
    "signature_mismatch",
  );
});

test("verify(awardee) never throws on garbage in the headers", () => {
  const garbage = ["", " ", "=", "sha256=", "zz", "\u00ff", `${"a".repeat(100_000)}`, "0x00", "====", "-1"];
  const variants: AwardeeOptions[] = [{}, { encoding: "base64" }, { prefix: "sha256=" }, TIMED];
  // A throw fails the test by itself; each answer must also be a refusal.
  for (const value of garbage) {
    for (const options of variants) {
      assert.equal(
        verify(headersFor({ "X-Awardee-Signature": value }), { options }).ok,
        false,
        value.slice(0, 40),
      );
    }
    const timed = timedHeaders(T, { "X-Awardee-Timestamp": value });
    assert.equal(verify(timed, { options: TIMED }).ok, false, value.slice(0, 40));
  }
  // Values a Web Headers would refuse, through a hand-made HeaderBag.
  const exotic: HeaderBag = { get: () => "\u2603\u0000", forEach: () => undefined };
  assert.equal(verify(exotic, { options: TIMED }).ok, false);
});
