// Provider.steps: for Stripe and Paddle, `verify` is exactly `authenticate` then `parse`, for every kind of input,
// since the receiver answers a repeated duplicate body with the steps instead of verify.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import {
  type Provider,
  paddleProvider,
  stripeProvider,
  type VerifyInput,
  type VerifyResult,
} from "hookledger";

const NOW = Date.UTC(2026, 0, 1);
const T = NOW / 1000;
const SECRETS = ["whsec_steps_a", "whsec_steps_b"];

/** verify(input) as the steps make it. */
function inSteps(provider: Provider, input: VerifyInput): VerifyResult {
  const steps = provider.steps;
  assert.ok(steps, `${provider.name} has steps`);
  const checked = steps.authenticate(input);
  if (!checked.ok) return checked;
  const parsed = steps.parse(input.body);
  return parsed.ok ? { ok: true, secretIndex: checked.secretIndex, event: parsed.event } : parsed;
}

function corpus(
  header: string,
  sign: (t: number, body: string, secret: string) => string,
  event: Record<string, unknown>,
) {
  const body = JSON.stringify(event);
  const cases: [string, string, Record<string, string>][] = [
    ["valid", body, { [header]: sign(T, body, SECRETS[0] as string) }],
    ["second secret", body, { [header]: sign(T, body, SECRETS[1] as string) }],
    ["wrong secret", body, { [header]: sign(T, body, "other") }],
    ["tampered", body.replace("}", ', "x": 1}'), { [header]: sign(T, body, SECRETS[0] as string) }],
    ["stale", body, { [header]: sign(T - 3600, body, SECRETS[0] as string) }],
    ["no header", body, {}],
    ["garbage header", body, { [header]: "=;,," }],
    ["not JSON", "not json", { [header]: sign(T, "not json", SECRETS[0] as string) }],
    ["an array", "[1]", { [header]: sign(T, "[1]", SECRETS[0] as string) }],
    ["no id", "{}", { [header]: sign(T, "{}", SECRETS[0] as string) }],
    ["too deep", "[".repeat(600), { [header]: sign(T, "[".repeat(600), SECRETS[0] as string) }],
  ];
  return cases.map(([name, payload, headers]) => ({
    name,
    input: { body: Buffer.from(payload), headers: new Headers(headers), secrets: SECRETS, now: NOW },
  }));
}

const hex = (secret: string, signed: string) => createHmac("sha256", secret).update(signed).digest("hex");

test("stripe: verify equals authenticate then parse, for valid, forged, stale, malformed and id-less deliveries", () => {
  const provider = stripeProvider();
  const sign = (t: number, body: string, secret: string) => `t=${t},v1=${hex(secret, `${t}.${body}`)}`;
  const event = {
    id: "evt_steps",
    type: "invoice.paid",
    created: T,
    data: { object: { id: "in_1", object: "invoice" } },
  };
  for (const { name, input } of corpus("stripe-signature", sign, event)) {
    assert.deepEqual(inSteps(provider, input), provider.verify(input), name);
  }
  assert.equal(provider.verify(corpus("stripe-signature", sign, event)[0]?.input as VerifyInput).ok, true);
});

test("paddle: verify equals authenticate then parse, for valid, forged, stale, malformed and id-less deliveries", () => {
  const provider = paddleProvider();
  const sign = (t: number, body: string, secret: string) => `ts=${t};h1=${hex(secret, `${t}:${body}`)}`;
  const event = {
    event_id: "evt_steps",
    event_type: "subscription.updated",
    occurred_at: "2025-12-31T23:59:58Z",
    data: { id: "sub_1" },
  };
  for (const { name, input } of corpus("paddle-signature", sign, event)) {
    assert.deepEqual(inSteps(provider, input), provider.verify(input), name);
  }
  assert.equal(provider.verify(corpus("paddle-signature", sign, event)[0]?.input as VerifyInput).ok, true);
});
