import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { test } from "node:test";
import { slackProvider } from "hookledger";
import type { HeaderBag, VerifyResult } from "hookledger";

// Slack's worked example (api.slack.com/authentication/verifying-requests-from-slack), a slash command.
const DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const DOC_TS = 1531420618;
const DOC_BODY =
  "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const DOC_SIG = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

// Slack ships no signing helper in an installed package, so other requests are signed with node:crypto the same way.
const SECRET = "slack-signing-current";
const OLD_SECRET = "slack-signing-old";
const NOW = Date.UTC(2026, 0, 1);
const T = NOW / 1000;

const callback = {
  token: "XXYYZZ",
  team_id: "T123ABC456",
  api_app_id: "A123ABC456",
  event: { type: "app_mention", user: "U123ABC456", text: "<@U0LAN0Z89> café ☃", ts: "1767225590.000100" },
  type: "event_callback",
  event_id: "Ev123ABC456",
  event_time: 1767225590,
};
const PAYLOAD = JSON.stringify(callback);

const sign = (ts: number | string, payload = PAYLOAD, secret = SECRET) =>
  `v0=${createHmac("sha256", secret).update(`v0:${ts}:${payload}`).digest("hex")}`;

function headersFor(ts: number | null = T, sig: string | null = ts === null ? null : sign(ts)): Headers {
  const headers = new Headers({ "content-type": "application/json" });
  if (ts !== null) headers.set("X-Slack-Request-Timestamp", String(ts));
  if (sig !== null) headers.set("X-Slack-Signature", sig);
  return headers;
}

function verify(headers: HeaderBag, { payload = PAYLOAD, secrets = [SECRET], now = NOW, options = {} } = {}) {
  return slackProvider(options).verify({ body: new TextEncoder().encode(payload), headers, secrets, now });
}

const signedVerify = (payload: string) => verify(headersFor(T, sign(T, payload)), { payload });
const reason = (result: VerifyResult) => (result.ok ? "ok" : result.reason);

test("verify(slack) accepts Slack's documented example: a form-encoded slash command, verified before parsing", () => {
  const result = verify(headersFor(DOC_TS, DOC_SIG), {
    payload: DOC_BODY,
    secrets: [DOC_SECRET],
    now: (DOC_TS + 60) * 1000,
  });
  assert.ok(result.ok && "event" in result);
  assert.equal(result.event.dedupeKey, "398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c");
  assert.equal(result.event.type, "command:/webhook-collect");
  assert.equal(result.event.dedupeOnBodyHash, false);
  const fields = result.event.payload as Record<string, string>;
  assert.equal(fields.command, "/webhook-collect");
  assert.equal(fields.user_name, "roadrunner");
  // One byte changed in the form (decoded, it would be the same command) fails: the raw bytes are verified.
  const reencoded = DOC_BODY.replace("%2Fwebhook-collect", "/webhook-collect");
  const tampered = verify(headersFor(DOC_TS, DOC_SIG), {
    payload: reencoded,
    secrets: [DOC_SECRET],
    now: DOC_TS * 1000,
  });
  assert.equal(reason(tampered), "signature_mismatch");
});

test("verify(slack) parses an Events API callback: event_id, event.type, event_time, no entity", () => {
  assert.deepEqual(verify(headersFor()), {
    ok: true,
    secretIndex: 0,
    event: {
      dedupeKey: "Ev123ABC456",
      type: "app_mention",
      payload: callback,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      occurredAt: new Date(1767225590 * 1000),
    },
  });
});

test("verify(slack) answers a signed url_verification with its challenge as text/plain", () => {
  const payload = JSON.stringify({
    token: "t",
    challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    type: "url_verification",
  });
  assert.deepEqual(signedVerify(payload), {
    ok: true,
    secretIndex: 0,
    reply: {
      status: 200,
      headers: { "content-type": "text/plain; charset=utf-8" },
      body: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
    },
  });
  const unsigned = verify(headersFor(T, sign(T, payload, "attacker")), { payload });
  assert.equal(reason(unsigned), "signature_mismatch");
  const noChallenge = JSON.stringify({ type: "url_verification" });
  assert.equal(reason(signedVerify(noChallenge)), "event_id_missing");
});

test("verify(slack) parses an interactivity payload: trigger_id and payload.type, payload the inner JSON", () => {
  const inner = {
    type: "block_actions",
    trigger_id: "12466734323.1395872398",
    actions: [{ action_id: "ok" }],
  };
  const result = signedVerify(`payload=${encodeURIComponent(JSON.stringify(inner))}`);
  assert.ok(result.ok && "event" in result);
  assert.deepEqual(result.event, {
    dedupeKey: "12466734323.1395872398",
    type: "block_actions",
    payload: inner,
    dedupeOnBodyHash: false,
    // Slack shows an interaction's response body to the user: the receiver acknowledges with an empty 200.
    acknowledge: { status: 200, headers: {}, body: "" },
  });
});

test("verify(slack) keys an interaction without trigger_id by the raw body's sha256 (last resort)", () => {
  const body = `payload=${encodeURIComponent(JSON.stringify({ type: "block_suggestion", value: "caf" }))}`;
  const result = signedVerify(body);
  assert.ok(result.ok && "event" in result);
  assert.equal(result.event.dedupeKey, `sha256:${createHash("sha256").update(body).digest("hex")}`);
  assert.equal(result.event.dedupeOnBodyHash, true);
  assert.equal(result.event.type, "block_suggestion");
});

test("verify(slack) keys app_rate_limited by team and minute", () => {
  const body = {
    token: "t",
    type: "app_rate_limited",
    team_id: "T123",
    minute_rate_limited: 1518467820,
    api_app_id: "A1",
  };
  const result = signedVerify(JSON.stringify(body));
  assert.ok(result.ok && "event" in result);
  assert.equal(result.event.dedupeKey, "app_rate_limited:T123:1518467820");
  assert.equal(result.event.type, "app_rate_limited");
});

test("verify(slack) answers a signed ssl_check with an empty 200 and writes nothing", () => {
  const result = signedVerify("ssl_check=1&token=xyz");
  assert.ok(result.ok && "reply" in result);
  assert.equal(result.reply.body, "");
});

test("verify(slack) refuses verified bodies it cannot read, naming the problem", () => {
  const cases: [string, string][] = [
    [JSON.stringify({ type: "event_callback", event: { type: "message" } }), "event_id_missing"],
    [JSON.stringify({ type: "event_callback", event_id: "Ev1" }), "event_type_missing"],
    ["payload=%7Bnot%20json", "body_not_json"],
    [`payload=${encodeURIComponent('{"trigger_id":"1.2"}')}`, "event_type_missing"],
    ["text=hello&user_id=U1", "body_not_json"],
    ["{not json", "body_not_json"],
  ];
  for (const [payload, expected] of cases) assert.equal(reason(signedVerify(payload)), expected, payload);
  const invalidUtf8 = slackProvider().verify({
    body: Uint8Array.from([0xff, 0xfe]),
    headers: headersFor(
      T,
      `v0=${createHmac("sha256", SECRET)
        .update(`v0:${T}:`)
        .update(Uint8Array.from([0xff, 0xfe]))
        .digest("hex")}`,
    ),
    secrets: [SECRET],
    now: NOW,
  });
  assert.equal(reason(invalidUtf8), "body_not_json");
});

test("verify(slack) rejects a timestamp 301 s old or 301 s ahead and accepts 300 s either way", () => {
  assert.equal(reason(verify(headersFor(T - 301))), "timestamp_outside_window");
  assert.equal(reason(verify(headersFor(T + 301))), "timestamp_outside_window");
  assert.equal(reason(verify(headersFor(T - 300))), "ok");
  assert.equal(reason(verify(headersFor(T + 300))), "ok");
  assert.equal(
    reason(verify(headersFor(T - 61), { options: { toleranceSeconds: 60 } })),
    "timestamp_outside_window",
  );
});

test("verify(slack) rejects a moved timestamp: it is signed", () => {
  assert.equal(reason(verify(headersFor(T - 1, sign(T)))), "signature_mismatch");
});

test("verify(slack) rejects a tampered body and another secret", () => {
  assert.equal(
    reason(verify(headersFor(), { payload: PAYLOAD.replace("café", "cafe") })),
    "signature_mismatch",
  );
  assert.equal(reason(verify(headersFor(T, sign(T, PAYLOAD, "attacker")))), "signature_mismatch");
});

test("verify(slack) rejects a missing or wrong prefix, a prefix of the signature and a wrong length", () => {
  const good = sign(T);
  assert.equal(reason(verify(headersFor(T, good.slice(3)))), "signature_malformed");
  assert.equal(reason(verify(headersFor(T, `v1=${good.slice(3)}`))), "signature_malformed");
  assert.equal(reason(verify(headersFor(T, good.slice(0, 35)))), "signature_mismatch");
  assert.equal(reason(verify(headersFor(T, `${good}00`))), "signature_mismatch");
  assert.equal(reason(verify(headersFor(T, `${good}0`))), "signature_malformed");
});

test("verify(slack) rejects a missing signature or timestamp header", () => {
  assert.equal(reason(verify(headersFor(T, null))), "signature_missing");
  const noTimestamp = new Headers({ "X-Slack-Signature": sign(T) });
  assert.equal(reason(verify(noTimestamp)), "timestamp_missing");
});

test("verify(slack) reports the index of whichever of two secrets matches", () => {
  const secrets = [OLD_SECRET, SECRET];
  const old = verify(headersFor(T, sign(T, PAYLOAD, OLD_SECRET)), { secrets });
  const current = verify(headersFor(), { secrets });
  assert.equal(old.ok && old.secretIndex, 0);
  assert.equal(current.ok && current.secretIndex, 1);
  assert.equal(reason(verify(headersFor(T, sign(T, PAYLOAD, OLD_SECRET)))), "signature_mismatch");
});

test("verify(slack) never throws on garbage in the headers", () => {
  const garbage = ["", " ", "v0=", "v0=zz", "=", "\u00ff", `v0=${"a".repeat(100_000)}`, "-1", "1e3", "0x10"];
  for (const value of garbage) {
    assert.equal(verify(headersFor(T, value)).ok, false, value.slice(0, 40));
    assert.equal(
      verify(new Headers({ "X-Slack-Request-Timestamp": value, "X-Slack-Signature": sign(T) })).ok,
      false,
    );
  }
  const exotic: HeaderBag = { get: () => "\u2603\u0000", forEach: () => undefined };
  assert.equal(verify(exotic).ok, false);
});

test("verify(slack) answers body_too_deep for JSON nested past 512 levels, in the body or an interaction's payload", () => {
  const deep = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
  const body = JSON.stringify({ ...callback, extra: "x" }).replace('"x"', deep(10_000));
  const result = signedVerify(body);
  assert.equal(reason(result), "body_too_deep");
  assert.ok(!result.ok && "detail" in result && /512/.test(result.detail));
  const form = `payload=${encodeURIComponent(`{"type":"block_actions","x":${deep(600)}}`)}`;
  assert.equal(reason(signedVerify(form)), "body_too_deep");
  const shallow = `payload=${encodeURIComponent(`{"type":"block_actions","trigger_id":"t1","x":${deep(500)}}`)}`;
  assert.equal(reason(signedVerify(shallow)), "ok");
});
