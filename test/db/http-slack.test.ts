// Slack through a real receiver (node:http): the url_verification handshake answered without a row, an unsigned
// one refused, a form body verified before parsing, and Slack's retries (same event_id) deduplicated even while
// the first delivery is still in flight (Slack's Events API documentation: an http_timeout retry fires at 3 s, concurrently).
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { after, before, test } from "node:test";
import { createReceiver } from "hookledger";
import { silentLogger } from "hookledger";
import { slackProvider } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { ledgerCounts, NOW_S, open, type Reply, send, serve } from "../helpers/http.js";

const SECRET = "slack-signing-secret-test";
let t: TestLedger;
let server: { url: string; close(): Promise<void> };
let url: string;

before(async () => {
  t = await freshLedger();
  const receiver = createReceiver({
    sources: [{ name: "slack", provider: slackProvider(), secrets: [SECRET], maxBodyBytes: 65_536 }],
    db: t.newPool("ingest"),
    ledger: t.ledger,
    log: silentLogger(),
    now: () => NOW_S * 1000,
  });
  server = await serve(receiver);
  url = `${server.url}/webhooks/slack`;
});

after(async () => {
  await server?.close();
  await t?.drop();
});

function slackHeaders(
  body: string,
  secret = SECRET,
  contentType = "application/json",
): Record<string, string> {
  const signature = createHmac("sha256", secret).update(`v0:${NOW_S}:${body}`).digest("hex");
  return {
    "content-type": contentType,
    "x-slack-request-timestamp": String(NOW_S),
    "x-slack-signature": `v0=${signature}`,
  };
}

async function slackRows(): Promise<number> {
  const { rows } = await t.pool.query<{ n: number }>(
    `select count(*)::int as n from ${t.ledger.s}.events where source = 'slack'`,
  );
  return rows[0]?.n ?? -1;
}

const callback = (id: string) =>
  JSON.stringify({
    type: "event_callback",
    team_id: "T123",
    event: { type: "message", text: "café ☃", ts: `${NOW_S - 2}.000100` },
    event_id: id,
    event_time: NOW_S - 2,
  });

function statusOf(reply: Reply): string {
  assert.equal(reply.status, 200, reply.text);
  return (JSON.parse(reply.text) as { status: string }).status;
}

test("POST a signed url_verification → 200 with the challenge as text/plain, and no ledger row", async () => {
  const challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P";
  const body = JSON.stringify({ token: "Jhj5dZrVaK7ZwHHjRyZWjbDl", challenge, type: "url_verification" });
  const before = await slackRows();
  const reply = await send(url, { headers: slackHeaders(body), body });
  assert.equal(reply.status, 200);
  assert.match(String(reply.headers["content-type"]), /^text\/plain/);
  assert.equal(reply.text, challenge);
  assert.equal(await slackRows(), before);
});

test("POST an unsigned or wrongly signed url_verification → 401, no challenge echoed, no row", async () => {
  const body = JSON.stringify({ token: "t", challenge: "echo-me", type: "url_verification" });
  const { "x-slack-signature": _, ...unsigned } = slackHeaders(body);
  for (const headers of [unsigned, slackHeaders(body, "attacker")]) {
    const reply = await send(url, { headers, body });
    assert.equal(reply.status, 401, reply.text);
    assert.doesNotMatch(reply.text, /echo-me/);
  }
  assert.equal(await slackRows(), 0);
});

test("POST a signed slash command (form-encoded) → an empty 200 (Slack shows the body to the user), keyed by trigger_id, typed command:/name", async () => {
  const body =
    "token=x&team_id=T1&command=%2Fdeploy&text=prod%20now&user_id=U1&trigger_id=398738663015.47445629121.803a0bc8";
  const reply = await send(url, {
    headers: slackHeaders(body, SECRET, "application/x-www-form-urlencoded"),
    body,
  });
  assert.equal(reply.status, 200);
  assert.equal(reply.text, "");
  const { rows } = await t.pool.query<{ event_type: string; payload: Record<string, string>; body: Buffer }>(
    `select event_type, payload, body from ${t.ledger.s}.event_records
      where source = 'slack' and dedupe_key = '398738663015.47445629121.803a0bc8'`,
  );
  assert.equal(rows[0]?.event_type, "command:/deploy");
  assert.equal(rows[0]?.payload.text, "prod now");
  assert.equal(rows[0]?.body.toString("utf8"), body);
  // The same fields written another way (what a parse-then-re-encode would produce) fail: raw bytes are verified.
  const reencoded = body
    .replace("%2Fdeploy", "/deploy")
    .replace("trigger_id=398738663015", "trigger_id=398738663016");
  const forged = await send(url, {
    headers: slackHeaders(body, SECRET, "application/x-www-form-urlencoded"),
    body: reencoded,
  });
  assert.equal(forged.status, 401, forged.text);
  assert.equal(await slackRows(), 1);
});

test("POST an original and its X-Slack-Retry-Num retry at once → one accepted, one duplicate, one row", async () => {
  const body = callback("Ev_concurrent");
  const original = slackHeaders(body);
  const retry = { ...original, "x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout" };
  const replies = await Promise.all([
    send(url, { headers: original, body }),
    send(url, { headers: retry, body }),
  ]);
  assert.deepEqual(replies.map(statusOf).sort(), ["accepted", "duplicate"]);
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "Ev_concurrent", "slack"), {
    events: 1,
    duplicates: 1,
  });
});

test("POST a retry while the original is still in flight → the retry is accepted, then the original is a duplicate", async () => {
  const body = callback("Ev_in_flight");
  const headers = slackHeaders(body);
  // The original's body is still arriving (a slow network: Slack's 3 s http_timeout fires a retry meanwhile).
  const first = open(url, { headers: { ...headers, "content-length": Buffer.byteLength(body) } });
  first.req.write(body.slice(0, 10));
  await waitFor("the original's request to start", async () => first.req.headersSent);
  const retry = await send(url, {
    headers: { ...headers, "x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout" },
    body,
  });
  assert.equal(statusOf(retry), "accepted");
  first.req.end(body.slice(10));
  assert.equal(statusOf(await first.reply), "duplicate");
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "Ev_in_flight", "slack"), {
    events: 1,
    duplicates: 1,
  });
});
