import assert from "node:assert/strict";
import { test } from "node:test";
import { sign } from "@octokit/webhooks-methods";
import { githubProvider } from "hookledger";
import type { HeaderBag, VerifyResult } from "hookledger";

const SECRET = "github-secret-current";
const OLD_SECRET = "github-secret-old";
const NOW = Date.UTC(2026, 0, 1);
const DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958";

const headersOf = (obj: Record<string, string>) => new Headers(obj);

const pullRequest = { action: "opened", number: 7, pull_request: { id: 1, title: "Add claim" } };
const PAYLOAD = JSON.stringify(pullRequest);

async function headersFor(
  payload = PAYLOAD,
  secret = SECRET,
  overrides: Record<string, string | null> = {},
): Promise<Headers> {
  const all: Record<string, string | null> = {
    "X-Hub-Signature-256": await sign(secret, payload),
    "X-GitHub-Delivery": DELIVERY,
    "X-GitHub-Event": "pull_request",
    "X-GitHub-Hook-ID": "42",
    ...overrides,
  };
  return headersOf(
    Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== null)),
  );
}

function verify(headers: HeaderBag, payload = PAYLOAD, secrets = [SECRET], now = NOW): VerifyResult {
  return githubProvider().verify({ body: new TextEncoder().encode(payload), headers, secrets, now });
}

async function withSignature(signature: string | null): Promise<VerifyResult> {
  return verify(await headersFor(PAYLOAD, SECRET, { "X-Hub-Signature-256": signature }));
}

test("sign(octokit) reproduces GitHub's published test vector", async () => {
  assert.equal(
    await sign("It's a Secret to Everybody", "Hello, World!"),
    "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
  );
});

test("verify(github) verifies GitHub's published test vector, then refuses its body as body_not_json", () => {
  const headers = headersOf({
    "X-Hub-Signature-256": "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
    "X-GitHub-Delivery": DELIVERY,
    "X-GitHub-Event": "ping",
  });
  const result = verify(headers, "Hello, World!", ["It's a Secret to Everybody"]);
  assert.deepEqual(result, { ok: false, reason: "body_not_json", detail: "the body must be a JSON object" });
});

test("verify(github) accepts a delivery signed by octokit and types it event.action", async () => {
  const result = verify(await headersFor());
  assert.deepEqual(result, {
    ok: true,
    secretIndex: 0,
    event: {
      dedupeKey: DELIVERY,
      type: "pull_request.opened",
      payload: pullRequest,
      payloadIsBody: true,
      dedupeOnBodyHash: true,
    },
  });
});

test("verify(github) types a delivery without action by the event header alone", async () => {
  const payload = JSON.stringify({ ref: "refs/heads/main", action: 3 });
  const result = verify(await headersFor(payload, SECRET, { "X-GitHub-Event": "push" }), payload);
  assert.equal(result.ok && "event" in result && result.event.type, "push");
});

test("verify(github) applies no time window", async () => {
  const headers = await headersFor();
  assert.equal(verify(headers, PAYLOAD, [SECRET], 0).ok, true);
  assert.equal(verify(headers, PAYLOAD, [SECRET], NOW + 10 * 365 * 86_400_000).ok, true);
});

test("verify(github) rejects a tampered body", async () => {
  const result = verify(await headersFor(), PAYLOAD.replace("opened", "closed"));
  assert.deepEqual(result, { ok: false, reason: "signature_mismatch" });
});

test("verify(github) rejects a signature made with another secret", async () => {
  assert.deepEqual(verify(await headersFor(PAYLOAD, "attacker")), {
    ok: false,
    reason: "signature_mismatch",
  });
});

test("verify(github) rejects a prefix of the right signature", async () => {
  const right = await sign(SECRET, PAYLOAD);
  assert.deepEqual(await withSignature(right.slice(0, 7 + 32)), { ok: false, reason: "signature_mismatch" });
  assert.deepEqual(await withSignature("sha256="), { ok: false, reason: "signature_mismatch" });
});

test("verify(github) rejects a signature of the wrong length", async () => {
  const right = await sign(SECRET, PAYLOAD);
  assert.deepEqual(await withSignature(`${right}00`), { ok: false, reason: "signature_mismatch" });
  assert.deepEqual(await withSignature(`${right}0`), { ok: false, reason: "signature_malformed" });
});

test("verify(github) rejects another prefix or non-hex as signature_malformed", async () => {
  const hex = (await sign(SECRET, PAYLOAD)).slice("sha256=".length);
  for (const signature of [
    `sha1=${hex}`,
    `SHA256=${hex}`,
    hex,
    `sha256=${hex}x`,
    `sha256=${"z".repeat(64)}`,
  ]) {
    assert.deepEqual(await withSignature(signature), { ok: false, reason: "signature_malformed" }, signature);
  }
});

test("verify(github) rejects a missing X-Hub-Signature-256 as signature_missing, even with the sha1 header", async () => {
  const headers = await headersFor(PAYLOAD, SECRET, {
    "X-Hub-Signature-256": null,
    "X-Hub-Signature": "sha1=0000000000000000000000000000000000000000",
  });
  assert.deepEqual(verify(headers), { ok: false, reason: "signature_missing" });
});

test("verify(github) rejects a missing X-GitHub-Delivery as event_id_missing", async () => {
  const result = verify(await headersFor(PAYLOAD, SECRET, { "X-GitHub-Delivery": null }));
  assert.equal(!result.ok && result.reason, "event_id_missing");
});

test("verify(github) rejects a missing X-GitHub-Event as event_type_missing", async () => {
  const result = verify(await headersFor(PAYLOAD, SECRET, { "X-GitHub-Event": null }));
  assert.equal(!result.ok && result.reason, "event_type_missing");
});

test("verify(github) reports a bad signature before missing id and type headers", async () => {
  const headers = await headersFor(PAYLOAD, "attacker", {
    "X-GitHub-Delivery": null,
    "X-GitHub-Event": null,
  });
  assert.deepEqual(verify(headers), { ok: false, reason: "signature_mismatch" });
});

test("verify(github) reports the index of whichever of two secrets matches", async () => {
  const both = [OLD_SECRET, SECRET];
  const old = verify(await headersFor(PAYLOAD, OLD_SECRET), PAYLOAD, both);
  const current = verify(await headersFor(PAYLOAD, SECRET), PAYLOAD, both);
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
});

test("verify(github) rejects a secret removed from the list", async () => {
  const result = verify(await headersFor(PAYLOAD, OLD_SECRET), PAYLOAD, [SECRET]);
  assert.deepEqual(result, { ok: false, reason: "signature_mismatch" });
  assert.deepEqual(verify(await headersFor(), PAYLOAD, []), { ok: false, reason: "signature_mismatch" });
});

test("verify(github) never throws on garbage in the headers", async () => {
  const garbage = [
    "",
    " ",
    "=",
    "sha256",
    "sha256==",
    "sha256=\u00ff",
    `sha256=${"a".repeat(100_000)}`,
    "sha256=0x00",
  ];
  // A throw fails the test by itself; each answer must also be a refusal.
  for (const signature of garbage)
    assert.equal((await withSignature(signature)).ok, false, signature.slice(0, 40));
  // Values a Web Headers would refuse, through a hand-made HeaderBag.
  const exotic: HeaderBag = { get: () => "sha256=\u2603\u0000", forEach: () => undefined };
  assert.equal(verify(exotic).ok, false);
});
