import "@shopify/shopify-api/adapters/web-api";
import assert from "node:assert/strict";
import { test } from "node:test";
import { verify as octokitVerify } from "@octokit/webhooks-methods";
import { NodeRuntime, Webhooks as PaddleWebhooks } from "@paddle/paddle-node-sdk";
import { ApiVersion, LogSeverity, shopifyApi } from "@shopify/shopify-api";
import {
  type AwardeeOptions,
  awardeeProvider,
  type GenericOptions,
  genericProvider,
  githubProvider,
  type Provider,
  paddleProvider,
  shopifyProvider,
  slackProvider,
  standardProvider,
  stripeProvider,
  type VerifyResult,
} from "hookledger";
import { type SignedDelivery, signDelivery } from "hookledger/testing";
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";

NodeRuntime.initialize();
const text = (delivery: SignedDelivery) => new TextDecoder().decode(delivery.body);

function ours(provider: Provider, delivery: SignedDelivery, secret: string, now = Date.now()): VerifyResult {
  return provider.verify({
    body: delivery.body,
    headers: new Headers(delivery.headers),
    secrets: [secret],
    now,
  });
}

function assertEvent(result: VerifyResult, dedupeKey: string, type: string): void {
  assert.ok(result.ok && "event" in result, JSON.stringify(result));
  assert.equal(result.event.dedupeKey, dedupeKey);
  assert.equal(result.event.type, type);
}

test("signDelivery(stripe) is accepted by stripe.webhooks.constructEvent and by verify(stripe)", () => {
  const secret = "whsec_testkit_stripe";
  const event = {
    id: "evt_1",
    object: "event",
    type: "invoice.paid",
    created: 1767225600,
    data: { object: {} },
  };
  const delivery = signDelivery({ provider: "stripe", secret, body: event });
  const parsed = new Stripe("sk_test_x").webhooks.constructEvent(
    text(delivery),
    delivery.headers["stripe-signature"] ?? "",
    secret,
  );
  assert.equal(parsed.id, "evt_1");
  assertEvent(ours(stripeProvider(), delivery, secret), "evt_1", "invoice.paid");
  assert.equal(ours(stripeProvider(), delivery, "whsec_other").ok, false);
});

test("signDelivery(stripe) with an old timestamp is refused by both, as it should be", () => {
  const secret = "whsec_testkit_stripe";
  const delivery = signDelivery({
    provider: "stripe",
    secret,
    body: "{}",
    timestamp: Date.now() / 1000 - 301,
  });
  assert.throws(() =>
    new Stripe("sk_test_x").webhooks.constructEvent(
      text(delivery),
      delivery.headers["stripe-signature"] ?? "",
      secret,
    ),
  );
  assert.deepEqual(ours(stripeProvider(), delivery, secret), {
    ok: false,
    reason: "timestamp_outside_window",
  });
});

test("signDelivery(github) is accepted by @octokit/webhooks-methods verify and by verify(github)", async () => {
  const secret = "github-testkit";
  const delivery = signDelivery({
    provider: "github",
    secret,
    body: { action: "opened", number: 7 },
    id: "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    type: "pull_request",
  });
  assert.equal(
    await octokitVerify(secret, text(delivery), delivery.headers["x-hub-signature-256"] ?? ""),
    true,
  );
  assert.equal(delivery.headers["x-github-delivery"], "72d3162e-cc78-11e3-81ab-4c9367dc0958");
  assertEvent(
    ours(githubProvider(), delivery, secret),
    "72d3162e-cc78-11e3-81ab-4c9367dc0958",
    "pull_request.opened",
  );
});

test("signDelivery(github) without a type is a TypeError naming X-GitHub-Event", () => {
  assert.throws(
    () => signDelivery({ provider: "github", secret: "s", body: {} }),
    /X-GitHub-Event: pass `type`/,
  );
});

test("signDelivery(stripe) refuses an id, which Stripe reads from the body", () => {
  assert.throws(
    () => signDelivery({ provider: "stripe", secret: "s", body: {}, id: "evt_1" }),
    /from the body/,
  );
});

test("signDelivery(shopify) is accepted by @shopify/shopify-api webhooks.validate and by verify(shopify)", async () => {
  const secret = "shpss_testkit";
  const shopify = shopifyApi({
    apiKey: "key",
    apiSecretKey: secret,
    apiVersion: ApiVersion.October25,
    hostName: "hooks.example.test",
    isEmbeddedApp: false,
    logger: { level: LogSeverity.Error, log: async () => {} },
  });
  const body = '{"id": 820982911946154508, "updated_at": "2025-12-31T18:00:00-05:00"}';
  const delivery = signDelivery({
    provider: "shopify",
    secret,
    body,
    id: "evt-shop-1",
    type: "orders/updated",
  });
  const rawRequest = new Request("https://hooks.example.test/webhooks/shop", { method: "POST", ...delivery });
  const theirs = await shopify.webhooks.validate({ rawBody: body, rawRequest });
  assert.equal(theirs.valid, true, JSON.stringify(theirs));
  assertEvent(ours(shopifyProvider(), delivery, secret), "evt-shop-1", "orders/updated");
});

test("signDelivery(paddle) is accepted by the Paddle SDK (isSignatureValid, unmarshal) and by verify(paddle)", async () => {
  const secret = "pdl_ntfset_testkit";
  const event = {
    event_id: "evt_01hv8x2acma2gz3he1k1ajddzt",
    event_type: "customer.updated",
    occurred_at: new Date().toISOString(),
    notification_id: "ntf_01hv8x2af5q3vfk4d1m5f4h6z3",
    data: {
      id: "ctm_01hv8x29kz0t586xy6zn1a62ny",
      name: "Ada",
      email: "ada@example.test",
      status: "active",
      locale: "en",
      marketing_consent: false,
      custom_data: null,
      import_meta: null,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: "2026-01-01T00:00:00Z",
    },
  };
  const delivery = signDelivery({ provider: "paddle", secret, body: event });
  const signature = delivery.headers["paddle-signature"] ?? "";
  const sdk = new PaddleWebhooks();
  assert.equal(await sdk.isSignatureValid(text(delivery), secret, signature), true);
  assert.equal((await sdk.unmarshal(text(delivery), secret, signature)).eventId, event.event_id);
  assert.equal(await sdk.isSignatureValid(text(delivery), "pdl_other", signature), false);
  assertEvent(ours(paddleProvider(), delivery, secret), event.event_id, "customer.updated");
});

test("signDelivery(slack) reproduces Slack's documented example signature and passes verify(slack)", () => {
  // api.slack.com/authentication/verifying-requests-from-slack
  const secret = "8f742231b10e8888abcd99yyyzzz85a5";
  const body =
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
  const delivery = signDelivery({ provider: "slack", secret, body, timestamp: 1531420618 });
  assert.equal(
    delivery.headers["x-slack-signature"],
    "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
  );
  assert.equal(delivery.headers["x-slack-request-timestamp"], "1531420618");
  assert.equal(delivery.headers["content-type"], "application/x-www-form-urlencoded");
  const result = ours(slackProvider(), delivery, secret, 1531420618_000);
  assertEvent(
    result,
    "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
    "command:/webhook-collect",
  );
  const json = {
    type: "event_callback",
    event_id: "Ev1",
    event_time: 1767225600,
    event: { type: "app_mention" },
  };
  assertEvent(
    ours(slackProvider(), signDelivery({ provider: "slack", secret, body: json }), secret),
    "Ev1",
    "app_mention",
  );
});

test("signDelivery(standard) is accepted by standardwebhooks Webhook.verify and by verify(standard)", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const body = { type: "invoice.paid", timestamp: "2025-12-31T23:59:58.250Z", data: { id: "in_1" } };
  const delivery = signDelivery({ provider: "standard", secret, body, id: "msg_1" });
  assert.deepEqual(new Webhook(secret).verify(text(delivery), delivery.headers), body);
  assertEvent(ours(standardProvider(), delivery, secret), "msg_1", "invoice.paid");
  const random = signDelivery({ provider: "standard", secret, body });
  assert.ok(random.headers["webhook-id"], "a random id when none is given");
  assert.equal(ours(standardProvider(), random, secret).ok, true);
});

test("signDelivery(awardee) passes verify(awardee), with the defaults and with every option set", () => {
  const secret = "awardee-testkit";
  const body = { id: "aw_1", timestamp: "2026-01-01T00:00:00Z" };
  for (const options of [
    {},
    {
      signatureHeader: "X-Signature",
      algorithm: "sha512",
      encoding: "base64",
      prefix: "sha512=",
      timestampHeader: "X-Awardee-Timestamp",
    },
  ] as AwardeeOptions[]) {
    const delivery = signDelivery({
      provider: "awardee",
      awardee: options,
      secret,
      body,
      id: "del_1",
      type: "award.granted",
    });
    assertEvent(ours(awardeeProvider(options), delivery, secret), "del_1", "award.granted");
    assert.equal(ours(awardeeProvider(options), delivery, "wrong").ok, false);
  }
});

test("signDelivery(generic) passes verify(generic): pointers, headers, and a template naming another header", () => {
  const secret = "generic-testkit";
  const byPointer: GenericOptions = {
    signatureHeader: "x-acme-signature",
    algorithm: "sha256",
    encoding: "hex",
    prefix: "sha256=",
    timestampHeader: "x-acme-timestamp",
    idPointer: "/id",
    typePointer: "/type",
  };
  const body = { id: "acme_1", type: "order.paid" };
  const one = signDelivery({ provider: "generic", generic: byPointer, secret, body });
  assertEvent(ours(genericProvider(byPointer), one, secret), "acme_1", "order.paid");
  const byHeader: GenericOptions = {
    signatureHeader: "X-Sig",
    algorithm: "sha512",
    encoding: "base64",
    timestampHeader: "X-Ts",
    signedTemplate: "{header:X-Request-Id}:{timestamp}:{body}",
    idHeader: "X-Event-Id",
    typeHeader: "X-Event-Type",
  };
  const two = signDelivery({
    provider: "generic",
    generic: byHeader,
    secret,
    body,
    id: "e-2",
    type: "order.shipped",
    headers: { "X-Request-Id": "req-9" },
  });
  assertEvent(ours(genericProvider(byHeader), two, secret), "e-2", "order.shipped");
  assert.throws(
    () => signDelivery({ provider: "generic", generic: byHeader, secret, body, type: "t" }),
    /names X-Request-Id: pass it in headers/,
  );
});

test("signDelivery signs bytes as they are and takes a Date as the timestamp", () => {
  const bytes = new Uint8Array([0x7b, 0x7d]);
  const delivery = signDelivery({
    provider: "stripe",
    secret: "s",
    body: bytes,
    timestamp: new Date(1767225600_500),
  });
  assert.deepEqual([...delivery.body], [0x7b, 0x7d]);
  assert.match(delivery.headers["stripe-signature"] ?? "", /^t=1767225600,v1=[0-9a-f]{64}$/);
});
