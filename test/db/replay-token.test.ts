import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createReceiver } from "hookledger";
import { createFetchHandler } from "hookledger";
import { REPLAY_TOKEN_HEADER } from "hookledger";
import { silentLogger } from "hookledger";
import { githubProvider } from "hookledger";
import { stripeProvider } from "hookledger";
import { replayStripe } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { fakeEvent, startFakeStripe } from "../helpers/fake-stripe.js";
import {
  GITHUB_SECRET,
  NOW_S,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  serve,
  stripeBody,
  stripeHeaders,
} from "../helpers/http.js";

const TOKEN = "replay-token-0123456789abcdef";

let t: TestLedger;
let withToken: { url: string; close(): Promise<void> };
let withoutToken: { url: string; close(): Promise<void> };
before(async () => {
  t = await freshLedger();
  const receiver = (replayToken: string | undefined) =>
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
        { name: "github", provider: githubProvider(), secrets: [GITHUB_SECRET], maxBodyBytes: 1_048_576 },
      ],
      db: t.pool,
      ledger: t.ledger,
      log: silentLogger(),
      now: () => NOW_S * 1000,
      replayToken,
    });
  withToken = await serve(receiver(TOKEN));
  withoutToken = await serve(receiver(undefined));
});
after(async () => {
  await withToken.close();
  await withoutToken.close();
  await t.drop();
});

async function row(id: string) {
  const { rows } = await t.pool.query<{ arrived_via: string; secret_index: number | null; headers: object }>(
    `select arrived_via, secret_index, headers from ${t.ledger.s}.event_records where dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

const replay = (base: string, body: string, token?: string, source = "stripe") =>
  send(`${base}/replay/${source}`, {
    headers: {
      "content-type": "application/json",
      ...(token !== undefined && { [REPLAY_TOKEN_HEADER]: token }),
    },
    body,
  });

test("POST /replay/stripe with the token claims the event as a replay, without a signature", async () => {
  const r = await replay(withToken.url, stripeBody("evt_replay_ok"), TOKEN);
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(JSON.parse(r.text), { status: "accepted", id: "evt_replay_ok" });
  const stored = await row("evt_replay_ok");
  assert.equal(stored?.arrived_via, "replay");
  assert.equal(stored?.secret_index, null);
  assert.ok(!JSON.stringify(stored?.headers).includes(TOKEN), "the token is never stored");
  const again = await replay(withToken.url, stripeBody("evt_replay_ok"), TOKEN);
  assert.deepEqual(
    JSON.parse(again.text),
    { status: "duplicate", id: "evt_replay_ok" },
    "dedupe still applies",
  );
});

for (const [name, token] of [
  ["a wrong token", "replay-token-0123456789abcdeX"],
  ["an empty token", ""],
  ["a prefix of the token", TOKEN.slice(0, 10)],
  ["a longer token", `${TOKEN}0`],
  ["no token header", undefined],
] as const) {
  test(`POST /replay/stripe with ${name} answers the uniform 401 and writes nothing`, async () => {
    const id = `evt_replay_${name.replaceAll(" ", "_")}`;
    const r = await replay(withToken.url, stripeBody(id), token);
    assert.equal(r.status, 401);
    assert.equal(JSON.parse(r.text).message, "signature verification failed");
    assert.equal(await row(id), undefined);
  });
}

test("POST /replay/stripe on a receiver without a token refuses even an empty or matching one (fail closed)", async () => {
  for (const token of ["", TOKEN, undefined]) {
    const r = await replay(withoutToken.url, stripeBody("evt_replay_unset"), token);
    assert.equal(r.status, 401);
  }
  assert.equal(await row("evt_replay_unset"), undefined);
});

test("the replay token on the provider route is ignored: the signature is still required", async () => {
  const body = stripeBody("evt_token_on_webhooks");
  const unsigned = await send(`${withToken.url}/webhooks/stripe`, {
    headers: { "content-type": "application/json", [REPLAY_TOKEN_HEADER]: TOKEN },
    body,
  });
  assert.equal(unsigned.status, 401);
  assert.equal(await row("evt_token_on_webhooks"), undefined);
  const signed = await send(`${withToken.url}/webhooks/stripe`, {
    headers: { ...stripeHeaders(body), [REPLAY_TOKEN_HEADER]: TOKEN },
    body,
  });
  assert.equal(signed.status, 200);
  assert.equal((await row("evt_token_on_webhooks"))?.arrived_via, "delivery");
});

test("the replay route keeps the size cap, the parsing and the event id checks", async () => {
  const big = await replay(withToken.url, stripeBody("evt_big", { pad: "x".repeat(STRIPE_CAP) }), TOKEN);
  assert.equal(big.status, 413);
  const notJson = await replay(withToken.url, "not json", TOKEN);
  assert.equal(notJson.status, 400);
  const noId = await replay(withToken.url, JSON.stringify({ object: "event", type: "x" }), TOKEN);
  assert.equal(noId.status, 400);
  assert.match(JSON.parse(noId.text).detail, /no `id`/);
});

test("POST /replay/github answers 404: the provider has no replay parser", async () => {
  const r = await replay(withToken.url, JSON.stringify({ zen: "hi" }), TOKEN, "github");
  assert.equal(r.status, 404);
  assert.match(JSON.parse(r.text).detail, /replay is not supported for provider github/);
  const wrong = await replay(withToken.url, JSON.stringify({ zen: "hi" }), "nope", "github");
  assert.equal(wrong.status, 401, "the token is checked first: an unauthenticated caller learns nothing");
});

test("the fetch adapter maps /replay/:source too", async () => {
  const handle = createFetchHandler(
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      ],
      db: t.pool,
      ledger: t.ledger,
      log: silentLogger(),
      replayToken: TOKEN,
    }),
  );
  const request = (token: string) =>
    handle(
      new Request("http://x/replay/stripe", {
        method: "POST",
        headers: { [REPLAY_TOKEN_HEADER]: token },
        body: stripeBody("evt_fetch_replay"),
      }),
    );
  assert.equal((await request("wrong")).status, 401);
  const ok = await request(TOKEN);
  assert.equal(ok.status, 200);
  assert.equal((await row("evt_fetch_replay"))?.arrived_via, "replay");
});

test("replayStripe --via re-POSTs each event with the token and counts the receiver's answers", async () => {
  const events = [fakeEvent("evt_via_1", 120), fakeEvent("evt_via_2", 60)];
  const fake = await startFakeStripe(events);
  try {
    await replay(withToken.url, JSON.stringify(events[0]), TOKEN);
    const report = await replayStripe({
      source: "stripe",
      api: { apiKey: fake.apiKey, apiBase: fake.url },
      since: new Date(Date.now() - 3_600_000),
      via: { url: withToken.url, token: TOKEN },
    });
    assert.deepEqual([report.fetched, report.duplicate, report.new, report.failed], [2, 1, 1, 0]);
    assert.equal((await row("evt_via_2"))?.arrived_via, "replay");
    const refused = await replayStripe({
      source: "stripe",
      api: { apiKey: fake.apiKey, apiBase: fake.url },
      since: new Date(Date.now() - 3_600_000),
      via: { url: withToken.url, token: "wrong" },
    });
    assert.equal(refused.failed, 2);
    assert.match(refused.failures[0]?.error ?? "", /answered 401/);
  } finally {
    await fake.close();
  }
});
