import "@shopify/shopify-api/adapters/web-api";
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiVersion, LogSeverity, shopifyApi } from "@shopify/shopify-api";
import { getHmac } from "@shopify/shopify-api/test-helpers";
import { shopifyProvider } from "hookledger";
import type { HeaderBag, VerifyResult } from "hookledger";

// Signatures come from @shopify/shopify-api's own test helper (`getHmac`: base64 HMAC-SHA256 of the body), and the
// library's `webhooks.validate` is asked to agree with us on the same request.
const SECRET = "shpss_current";
const OLD_SECRET = "shpss_old";
const NOW = Date.UTC(2026, 0, 1);

// Written as Shopify writes it: the id exceeds 2^53, so a JS number literal (or JSON.stringify) would round it.
const PAYLOAD = `{
  "id": 820982911946154508,
  "admin_graphql_api_id": "gid://shopify/Order/820982911946154508",
  "updated_at": "2025-12-31T18:00:00-05:00",
  "note": "café ☃"
}`;

function headersFor(
  overrides: Record<string, string | null> = {},
  payload = PAYLOAD,
  secret = SECRET,
): Headers {
  const all: Record<string, string | null> = {
    "X-Shopify-Hmac-Sha256": getHmac(payload, secret),
    "X-Shopify-Topic": "orders/updated",
    "X-Shopify-Shop-Domain": "acme.myshopify.com",
    "X-Shopify-API-Version": "2025-10",
    "X-Shopify-Webhook-Id": "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
    "X-Shopify-Event-Id": "98880550-7158-44d4-b7cd-2c97c8a091b5",
    "X-Shopify-Triggered-At": "2026-01-01T00:00:00.123456789Z",
    ...overrides,
  };
  return new Headers(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null));
}

function verify(headers: HeaderBag, { payload = PAYLOAD, secrets = [SECRET] } = {}): VerifyResult {
  return shopifyProvider().verify({ body: new TextEncoder().encode(payload), headers, secrets, now: NOW });
}

const reason = (result: VerifyResult) => (result.ok ? "ok" : result.reason);

test("verify(shopify) accepts the library's HMAC and parses id, topic, exact entity id, version and time", () => {
  const result = verify(headersFor());
  assert.ok(result.ok && "event" in result);
  assert.equal(result.secretIndex, 0);
  const { payload, ...event } = result.event;
  assert.deepEqual(event, {
    dedupeKey: "98880550-7158-44d4-b7cd-2c97c8a091b5",
    type: "orders/updated",
    payloadIsBody: true,
    dedupeOnBodyHash: true,
    occurredAt: new Date("2026-01-01T00:00:00.123Z"),
    entity: { type: "orders", id: "820982911946154508", version: Date.parse("2025-12-31T23:00:00Z") },
  });
  assert.equal((payload as { note: string }).note, "café ☃");
});

test("verify(shopify) agrees with @shopify/shopify-api's webhooks.validate on the same request", async () => {
  const shopify = shopifyApi({
    apiKey: "key",
    apiSecretKey: SECRET,
    apiVersion: ApiVersion.October25,
    hostName: "hooks.example.test",
    isEmbeddedApp: false,
    logger: { level: LogSeverity.Error, log: async () => {} },
  });
  for (const [headers, expected] of [
    [headersFor(), true],
    [headersFor({}, PAYLOAD, "attacker"), false],
  ] as const) {
    const rawRequest = new Request("https://hooks.example.test/webhooks/shop", {
      method: "POST",
      headers,
      body: PAYLOAD,
    });
    const theirs = await shopify.webhooks.validate({ rawBody: PAYLOAD, rawRequest });
    assert.equal(theirs.valid, expected);
    assert.equal(verify(headers).ok, expected);
  }
});

test("verify(shopify) falls back to X-Shopify-Webhook-Id without an event id", () => {
  const result = verify(headersFor({ "X-Shopify-Event-Id": null }));
  assert.equal(
    result.ok && "event" in result && result.event.dedupeKey,
    "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043",
  );
});

test("verify(shopify) reads the unprefixed headers of Shopify's events deliveries", () => {
  const headers = new Headers({
    "shopify-hmac-sha256": getHmac(PAYLOAD, SECRET),
    "shopify-topic": "orders/updated",
    "shopify-event-id": "evt-1",
  });
  const result = verify(headers);
  assert.equal(result.ok && "event" in result && result.event.dedupeKey, "evt-1");
});

test("verify(shopify) takes a safe numeric or string id and refuses to round an unsafe one", () => {
  const cases: [Record<string, unknown>, string | undefined][] = [
    [{ id: 450789469, updated_at: "2026-01-01T00:00:00Z" }, "450789469"],
    [{ id: "gid-less", updated_at: "2026-01-01T00:00:00Z" }, "gid-less"],
    [{ id: 820982911946154500, updated_at: "2026-01-01T00:00:00Z" }, undefined],
    [{ id: 1, updated_at: "not a date" }, undefined],
    [{ id: 1 }, undefined],
  ];
  for (const [body, id] of cases) {
    const payload = JSON.stringify(body);
    const result = verify(headersFor({}, payload), { payload });
    assert.ok(result.ok && "event" in result, payload);
    assert.equal(result.event.entity?.id, id, payload);
  }
});

test("verify(shopify) types the entity by the whole topic when it has no '/'", () => {
  const result = verify(headersFor({ "X-Shopify-Topic": "shop" }));
  assert.equal(result.ok && "event" in result && result.event.entity?.type, "shop");
});

test("verify(shopify) leaves out occurredAt when X-Shopify-Triggered-At is absent or not a date", () => {
  for (const value of [null, "yesterday"]) {
    const result = verify(headersFor({ "X-Shopify-Triggered-At": value }));
    assert.ok(result.ok && "event" in result);
    assert.equal(result.event.occurredAt, undefined);
  }
});

test("verify(shopify) rejects a tampered body", () => {
  assert.equal(
    reason(verify(headersFor(), { payload: PAYLOAD.replace("café", "cafe") })),
    "signature_mismatch",
  );
});

test("verify(shopify) rejects a signature made with another secret", () => {
  assert.equal(reason(verify(headersFor({}, PAYLOAD, "attacker"))), "signature_mismatch");
});

test("verify(shopify) rejects a prefix of the right signature and one of the wrong length", () => {
  const good = getHmac(PAYLOAD, SECRET);
  assert.equal(
    reason(verify(headersFor({ "X-Shopify-Hmac-Sha256": good.slice(0, 24) }))),
    "signature_mismatch",
  );
  const longer = Buffer.concat([Buffer.from(good, "base64"), Buffer.alloc(1)]).toString("base64");
  assert.equal(reason(verify(headersFor({ "X-Shopify-Hmac-Sha256": longer }))), "signature_mismatch");
  assert.equal(reason(verify(headersFor({ "X-Shopify-Hmac-Sha256": good.slice(1) }))), "signature_malformed");
  const hex = Buffer.from(good, "base64").toString("hex");
  assert.equal(reason(verify(headersFor({ "X-Shopify-Hmac-Sha256": hex }))), "signature_mismatch");
});

test("verify(shopify) rejects a missing X-Shopify-Hmac-Sha256 as signature_missing", () => {
  assert.equal(reason(verify(headersFor({ "X-Shopify-Hmac-Sha256": null }))), "signature_missing");
});

test("verify(shopify) rejects missing id headers as event_id_missing and a missing topic as event_type_missing", () => {
  const noIds = headersFor({ "X-Shopify-Event-Id": null, "X-Shopify-Webhook-Id": null });
  assert.equal(reason(verify(noIds)), "event_id_missing");
  assert.equal(reason(verify(headersFor({ "X-Shopify-Topic": null }))), "event_type_missing");
});

test("verify(shopify) reports a bad signature before missing id and topic headers", () => {
  const headers = headersFor({ "X-Shopify-Event-Id": null, "X-Shopify-Topic": null }, PAYLOAD, "attacker");
  assert.equal(reason(verify(headers)), "signature_mismatch");
});

test("verify(shopify) rejects a body that is not a JSON object as body_not_json", () => {
  const payload = "[1]";
  assert.equal(reason(verify(headersFor({}, payload), { payload })), "body_not_json");
});

test("verify(shopify) applies no window (no timestamp is signed)", () => {
  const result = shopifyProvider().verify({
    body: new TextEncoder().encode(PAYLOAD),
    headers: headersFor(),
    secrets: [SECRET],
    now: 0,
  });
  assert.equal(reason(result), "ok");
});

test("verify(shopify) reports the index of whichever of two secrets matches", () => {
  const secrets = [OLD_SECRET, SECRET];
  const old = verify(headersFor({}, PAYLOAD, OLD_SECRET), { secrets });
  const current = verify(headersFor(), { secrets });
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
  assert.equal(reason(verify(headersFor({}, PAYLOAD, OLD_SECRET))), "signature_mismatch");
});

test("verify(shopify) never throws on garbage in the headers", () => {
  const garbage = ["", " ", "=", "==", "zz", "\u00ff", "a".repeat(100_000), "====", "-1", "abc=def="];
  for (const value of garbage) {
    assert.equal(verify(headersFor({ "X-Shopify-Hmac-Sha256": value })).ok, false, value.slice(0, 40));
  }
  const exotic: HeaderBag = { get: () => "\u2603\u0000", forEach: () => undefined };
  assert.equal(verify(exotic).ok, false);
});
