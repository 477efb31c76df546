// docs/architecture.md §4: too many failed verifications from one client address answer 429 with Retry-After;
// deliveries that verify are never limited, whatever their address.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createReceiver, type ReceiverOptions, silentLogger, stripeProvider } from "hookledger";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import {
  NOW_S,
  type Reply,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  serve,
  stripeBody,
  stripeHeaders,
} from "../helpers/http.js";

const TOKEN = "replay-token-for-tests";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

async function server(options: Partial<ReceiverOptions> = {}) {
  return serve(
    createReceiver({
      sources: [
        { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      ],
      db: t.pool,
      ledger: t.ledger,
      log: silentLogger(),
      now: () => NOW_S * 1000,
      replayToken: TOKEN,
      ...options,
    }),
  );
}

const badSignature = (url: string, i: number, extra: Record<string, string> = {}) => {
  const payload = stripeBody(`evt_forged_${i}`);
  return send(`${url}/webhooks/stripe`, {
    headers: { ...stripeHeaders(payload, "whsec_wrong"), ...extra },
    body: payload,
  });
};
const genuine = (url: string, id: string, extra: Record<string, string> = {}) => {
  const payload = stripeBody(id);
  return send(`${url}/webhooks/stripe`, { headers: { ...stripeHeaders(payload), ...extra }, body: payload });
};

/** Runs `count` requests, `width` at a time, and returns their replies in order. */
async function burst(count: number, one: (i: number) => Promise<Reply>, width = 10): Promise<Reply[]> {
  const replies: Reply[] = [];
  for (let i = 0; i < count; i += width) {
    const batch = Array.from({ length: Math.min(width, count - i) }, (_, j) => one(i + j));
    replies.push(...(await Promise.all(batch)));
  }
  return replies;
}

const statuses = (replies: readonly Reply[]) => {
  const counts: Record<number, number> = {};
  for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
};

test("600 bad signatures from one address: 401 up to 30 a minute, then 429 with Retry-After; a genuine delivery in the middle is accepted", async () => {
  const s = await server();
  try {
    const first = await burst(300, (i) => badSignature(s.url, i));
    const valid = await genuine(s.url, "evt_genuine_mid_burst");
    const rest = await burst(300, (i) => badSignature(s.url, 300 + i));
    assert.deepEqual(statuses([...first, ...rest]), { 401: 30, 429: 570 });
    assert.equal(valid.status, 200, valid.text);
    assert.deepEqual(JSON.parse(valid.text), { status: "accepted", id: "evt_genuine_mid_burst" });
    const limited = rest.at(-1);
    const retryAfter = Number(limited?.headers["retry-after"]);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${limited?.headers["retry-after"]}`);
    assert.equal(JSON.parse(limited?.text ?? "{}").error, "too_many_failures");
    // Still limited, still never for a delivery that verifies (a duplicate is answered as one).
    assert.equal((await genuine(s.url, "evt_genuine_mid_burst")).status, 200);
    const rows = await t.pool.query(
      `select 1 from ${t.ledger.s}.events where dedupe_key like 'evt_forged_%'`,
    );
    assert.equal(rows.rowCount, 0, "nothing written for a forged delivery");
  } finally {
    await s.close();
  }
});

test("replay-token guesses count as failed verifications; the right token still replays", async () => {
  const s = await server({ failureLimit: { maxFailures: 5 } });
  try {
    const guesses = await burst(20, (i) => {
      const payload = stripeBody(`evt_guess_${i}`);
      return send(`${s.url}/replay/stripe`, {
        headers: { "content-type": "application/json", "x-hookledger-replay-token": `guess-${i}` },
        body: payload,
      });
    });
    assert.deepEqual(statuses(guesses), { 401: 5, 429: 15 });
    const payload = stripeBody("evt_replayed_while_limited");
    const replayed = await send(`${s.url}/replay/stripe`, {
      headers: { "content-type": "application/json", "x-hookledger-replay-token": TOKEN },
      body: payload,
    });
    assert.equal(replayed.status, 200, replayed.text);
  } finally {
    await s.close();
  }
});

test("X-Forwarded-For is ignored unless trustProxy: a forged header does not escape the limit", async () => {
  const s = await server({ failureLimit: { maxFailures: 3 } });
  try {
    const replies = await burst(10, (i) => badSignature(s.url, i, { "x-forwarded-for": `203.0.113.${i}` }));
    assert.deepEqual(statuses(replies), { 401: 3, 429: 7 });
  } finally {
    await s.close();
  }
});

test("trustProxy: the address the proxy appended (the last X-Forwarded-For entry) is the client's", async () => {
  const s = await server({ failureLimit: { maxFailures: 3, maxAddresses: 2 }, trustProxy: true });
  try {
    // The client may write anything before the proxy's entry; only the last one counts.
    const fromA = (i: number) => badSignature(s.url, i, { "x-forwarded-for": `10.9.9.${i}, 198.51.100.7` });
    assert.deepEqual(statuses(await burst(5, fromA)), { 401: 3, 429: 2 });
    const fromB = await badSignature(s.url, 100, { "x-forwarded-for": "198.51.100.8" });
    assert.equal(fromB.status, 401, "another client behind the same proxy has its own count");
    // IPv6 clients are counted per /64: hopping within one prefix does not reset the count.
    const v6 = (i: number) => badSignature(s.url, 200 + i, { "x-forwarded-for": `2001:db8:1:2::${i + 1}` });
    assert.deepEqual(statuses(await burst(5, v6, 1)), { 401: 3, 429: 2 });
    // Bounded memory: two addresses are kept, so A (least recently seen) was dropped and starts again.
    assert.equal((await fromA(300)).status, 401);
  } finally {
    await s.close();
  }
});
