// Forward mode (docs/forwarding.md) through createHookledger, as a user configures it: signed Stripe deliveries in,
// Standard Webhooks deliveries out to a real HTTP destination, checked with the official `standardwebhooks` package.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, test } from "node:test";
import {
  ConfigError,
  createHookledger,
  enableForwardDestination,
  type ForwardConfig,
  type Hookledger,
  ledgerContext,
  listForwardAttempts,
  listForwardDestinations,
  listOutbox,
  replayStripe,
  retryEvents,
  retryOutbox,
  silentLogger,
} from "hookledger";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { type Answer, type Received, startAlertReceiver } from "../helpers/alert-receiver.js";
import { testDatabaseUrl, waitFor } from "../helpers/db.js";
import { fakeEvent, startFakeStripe } from "../helpers/fake-stripe.js";
import { serve, stripeBody, stripeHeaders } from "../helpers/http.js";

const url = testDatabaseUrl();
const admin = new pg.Pool({ connectionString: url, max: 2 });
const schemas: string[] = [];
after(async () => {
  for (const schema of schemas) await admin.query(`drop schema if exists "${schema}" cascade`);
  await admin.end();
});

const SECRET = `whsec_${randomBytes(32).toString("base64")}`;
const fastRetry = { maxAttempts: 20, baseDelayMs: 20, maxDelayMs: 60 };

interface Setup {
  hl: Hookledger;
  schema: string;
  base: string;
  destination: Awaited<ReturnType<typeof startAlertReceiver>>;
  post(id: string, extra?: Record<string, unknown>): Promise<Response>;
  close(): Promise<void>;
}

/** A hookledger whose `stripe` source forwards to a local destination answering `answer`, worker running. */
async function forwarding(
  answer: (n: number, request: Received) => Answer | Promise<Answer>,
  forward: Partial<ForwardConfig> = {},
): Promise<Setup> {
  const destination = await startAlertReceiver(answer, "/hooks");
  const schema = `fw_${randomBytes(5).toString("hex")}`;
  schemas.push(schema);
  const hl = createHookledger({
    connectionString: url,
    schema,
    sources: [
      {
        name: "stripe",
        provider: "stripe",
        secrets: ["whsec_test_a"],
        forward: { url: destination.url, secret: SECRET, retry: fastRetry, ...forward },
      },
    ],
    worker: { pollIntervalMs: 50 },
    log: silentLogger(),
  });
  await hl.migrate();
  hl.startWorker();
  const server = await serve(hl);
  return {
    hl,
    schema,
    base: server.url,
    destination,
    post: (id, extra = {}) => {
      const body = stripeBody(id, extra);
      return fetch(`${server.url}/webhooks/stripe`, { method: "POST", headers: stripeHeaders(body), body });
    },
    async close() {
      await hl.close();
      await server.close();
      await destination.close();
    },
  };
}

const eventIdOf = (r: Received) => r.headers["hookledger-event-id"];
const forwardsOf = async (schema: string) =>
  (await listOutbox(admin, ledgerContext(schema), { source: "stripe", sender: "forward" }, 1000)).sort(
    (a, b) => a.eventId.localeCompare(b.eventId),
  );

test("forward delivers each event once, the provider's bytes unchanged, signed as Standard Webhooks", async () => {
  const s = await forwarding(() => 200);
  try {
    const bodies = new Map<string, string>();
    for (const id of ["evt_f1", "evt_f2", "evt_f3"]) {
      bodies.set(id, stripeBody(id));
      assert.equal((await s.post(id)).status, 200);
    }
    assert.equal((await s.post("evt_f2")).status, 200); // a duplicate: forwarded once all the same
    await waitFor(
      "three forwards sent",
      async () =>
        (await forwardsOf(s.schema)).every((m) => m.status === "sent") && s.destination.received.length >= 3,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(s.destination.received.length, 3);
    const verifier = new Webhook(SECRET);
    for (const request of s.destination.received) {
      const id = String(eventIdOf(request));
      assert.equal(request.body, bodies.get(id), "the body is the provider's, byte for byte");
      const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));
      assert.doesNotThrow(() => verifier.verify(request.body, headers), "standardwebhooks verifies it");
      assert.equal(request.headers["hookledger-source"], "stripe");
      assert.equal(request.headers["hookledger-provider"], "stripe");
      assert.equal(request.headers["hookledger-event-type"], "customer.subscription.updated");
      assert.match(String(request.headers["webhook-id"]), /^hl_[A-Za-z0-9_-]{32}$/);
    }
    const ids = new Set(s.destination.received.map((r) => r.headers["webhook-id"]));
    assert.equal(ids.size, 3);
  } finally {
    await s.close();
  }
});

test("forward retries a failed delivery under the same webhook-id, records each attempt, and a tampered body fails verification", async () => {
  const s = await forwarding((n) => (n < 2 ? { status: 503, body: "down for a moment" } : 200));
  try {
    await s.post("evt_r1");
    await waitFor("the forward sent", async () => (await forwardsOf(s.schema))[0]?.status === "sent");
    const [a, b, c] = s.destination.received;
    assert.ok(a && b && c);
    assert.equal(a.headers["webhook-id"], c.headers["webhook-id"]);
    assert.deepEqual(
      s.destination.received.map((r) => r.headers["hookledger-attempt"]),
      ["1", "2", "3"],
    );
    const attempts = await listForwardAttempts(admin, ledgerContext(s.schema), "stripe", "evt_r1");
    assert.deepEqual(
      attempts.map((x) => [x.attempt, x.status]),
      [
        [1, 503],
        [2, 503],
        [3, 200],
      ],
    );
    assert.equal(attempts[0]?.snippet, "down for a moment");
    const headers = Object.fromEntries(Object.entries(c.headers).map(([k, v]) => [k, String(v)]));
    assert.throws(() => new Webhook(SECRET).verify(`${c.body} `, headers));
  } finally {
    await s.close();
  }
});

const sub = (entity: string, created: number) => ({
  created,
  data: { object: { id: entity, object: "subscription", status: "active" } },
});

test('forward with ordering "entity" delivers one entity in version order while a failing head holds only that entity', async () => {
  let headFailures = 0;
  const s = await forwarding(
    (_n, request) => {
      // The first event of sub_A fails three times: its successors wait, sub_B's go on.
      if (eventIdOf(request) === "evt_a1" && headFailures < 3) {
        headFailures++;
        return 500;
      }
      return 200;
    },
    { ordering: "entity" },
  );
  try {
    const t0 = Math.floor(Date.now() / 1000) - 100;
    await s.post("evt_a1", sub("sub_A", t0));
    await s.post("evt_a2", sub("sub_A", t0 + 1));
    await s.post("evt_b1", sub("sub_B", t0));
    await s.post("evt_a3", sub("sub_A", t0 + 2));
    await waitFor(
      "four forwards sent",
      async () => (await forwardsOf(s.schema)).filter((m) => m.status === "sent").length === 4,
    );
    const order = s.destination.received.map((r) => `${eventIdOf(r)}:${r.headers["hookledger-attempt"]}`);
    const firstA1Success = order.indexOf("evt_a1:4");
    assert.ok(firstA1Success >= 0, order.join(" "));
    assert.ok(order.indexOf("evt_b1:1") < firstA1Success, `sub_B was not held: ${order.join(" ")}`);
    const aOnly = order.filter((x) => x.startsWith("evt_a"));
    assert.deepEqual(aOnly, ["evt_a1:1", "evt_a1:2", "evt_a1:3", "evt_a1:4", "evt_a2:1", "evt_a3:1"]);
    // An older event of sub_A arriving after a newer one was delivered is stale: recorded, not sent.
    await s.post("evt_a0", sub("sub_A", t0 - 50));
    await waitFor("evt_a0 recorded stale", async () =>
      (await forwardsOf(s.schema)).some((m) => m.eventId === "evt_a0" && m.status === "stale"),
    );
    assert.ok(!s.destination.received.some((r) => eventIdOf(r) === "evt_a0"));
  } finally {
    await s.close();
  }
});

test("forward: a 410 disables the destination without spending attempts; enableForwardDestination sends what waited", async () => {
  let gone = true;
  const s = await forwarding(() => (gone ? 410 : 200));
  try {
    await s.post("evt_g1");
    await waitFor("the destination disabled", async () => {
      const [d] = await listForwardDestinations(admin, ledgerContext(s.schema), ["stripe"]);
      return d?.disabledAt !== null && d?.disabledAt !== undefined;
    });
    await s.post("evt_g2");
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(s.destination.received.length, 1, "nothing more is sent to a disabled destination");
    const waiting = await forwardsOf(s.schema);
    assert.deepEqual(
      waiting.map((m) => [m.eventId, m.status, m.attempts]),
      [
        ["evt_g1", "pending", 0],
        ["evt_g2", "pending", 0],
      ],
    );
    gone = false;
    assert.equal(await enableForwardDestination(admin, ledgerContext(s.schema), "stripe"), true);
    await waitFor("both sent", async () => (await forwardsOf(s.schema)).every((m) => m.status === "sent"));
    const [d] = await listForwardDestinations(admin, ledgerContext(s.schema));
    assert.equal(d?.disabledAt, null);
    assert.equal(d?.sent, 2);
  } finally {
    await s.close();
  }
});

test("forward: a destination failing every attempt is paused by the breaker, its events' attempts left unspent", async () => {
  const s = await forwarding(() => 500);
  try {
    for (const id of ["evt_p1", "evt_p2", "evt_p3"]) await s.post(id);
    await waitFor("the breaker open", async () => {
      const [d] = await listForwardDestinations(admin, ledgerContext(s.schema), ["stripe"]);
      return d?.pausedUntil !== null && d?.pausedUntil !== undefined;
    });
    const during = s.destination.received.length;
    assert.ok(during >= 10, `paused after ${during} failures`);
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.ok(
      s.destination.received.length <= during + 3,
      "no more calls while paused (bar those in flight)",
    );
    const messages = await forwardsOf(s.schema);
    assert.ok(messages.every((m) => m.status === "pending" && m.attempts < fastRetry.maxAttempts));
  } finally {
    await s.close();
  }
});

test("forward with breaker options pauses after its threshold and sends again once the pause is over", async () => {
  let failing = true;
  const s = await forwarding(() => (failing ? 500 : 200), {
    breaker: { threshold: 3, pauseMs: 600, maxPauseMs: 600 },
  });
  try {
    await s.post("evt_b1");
    await waitFor("the breaker open", async () => {
      const [d] = await listForwardDestinations(admin, ledgerContext(s.schema), ["stripe"]);
      return d?.pausedUntil !== null && d?.pausedUntil !== undefined;
    });
    assert.equal(s.destination.received.length, 3, "paused after its third failure in a row");
    failing = false;
    await waitFor("the forward sent", async () => (await forwardsOf(s.schema))[0]?.status === "sent");
    const [d] = await listForwardDestinations(admin, ledgerContext(s.schema), ["stripe"]);
    assert.deepEqual([d?.pausedUntil, d?.failures], [null, 0], "the success closed the breaker");
  } finally {
    await s.close();
  }
});

test("forward: a dead delivery is sent again by retryOutbox", async () => {
  let failing = true;
  const s = await forwarding(() => (failing ? 500 : 200), {
    retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 },
  });
  try {
    await s.post("evt_d1");
    await waitFor("the forward dead", async () => (await forwardsOf(s.schema))[0]?.status === "dead");
    failing = false;
    const [m] = await forwardsOf(s.schema);
    assert.ok(m);
    assert.deepEqual(await retryOutbox(admin, ledgerContext(s.schema), { keys: [m.idempotencyKey] }), [
      m.idempotencyKey,
    ]);
    await waitFor("the forward sent", async () => (await forwardsOf(s.schema))[0]?.status === "sent");
  } finally {
    await s.close();
  }
});

test("forward: retryEvents of forwarded events sends a dead forward again under its webhook-id, a sent one never twice", async () => {
  let failing = true;
  const s = await forwarding((_n, r) => (failing && eventIdOf(r) === "evt_q1" ? 500 : 200), {
    retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 },
  });
  const eventsSettled = async () =>
    (
      await admin.query<{ n: number }>(
        `select count(*)::int as n from "${s.schema}".events where status = 'settled'`,
      )
    ).rows[0]?.n === 2;
  try {
    await s.post("evt_q1");
    await s.post("evt_q2");
    await waitFor("one forward dead, one sent", async () => {
      const [q1, q2] = await forwardsOf(s.schema);
      return q1?.status === "dead" && q2?.status === "sent";
    });
    await waitFor("both events settled", eventsSettled);
    failing = false;
    const keys = ["evt_q1", "evt_q2"].map((dedupeKey) => ({ source: "stripe", dedupeKey }));
    const results = await retryEvents(admin, ledgerContext(s.schema), keys, { force: true });
    assert.equal(results.length, 2);
    await waitFor("both events settled again", eventsSettled);
    await waitFor("every forward sent", async () =>
      (await forwardsOf(s.schema)).every((m) => m.status === "sent"),
    );
    const received = (id: string) => s.destination.received.filter((r) => eventIdOf(r) === id);
    assert.equal(received("evt_q2").length, 1, "a sent forward is not sent again by a requeue");
    const q1 = received("evt_q1");
    assert.equal(q1.length, 3, "two failed attempts, then the one after the requeue");
    assert.equal(
      new Set(q1.map((r) => r.headers["webhook-id"])).size,
      1,
      "one webhook-id across the requeue",
    );
  } finally {
    await s.close();
  }
});

test("forward: replayStripe of a forwarding source forwards the missed event once, the delivered ones never again", async () => {
  const s = await forwarding(() => 200);
  const events = [fakeEvent("evt_r1", 300), fakeEvent("evt_r2", 200), fakeEvent("evt_r3", 100)];
  const stripe = await startFakeStripe(events);
  try {
    for (const id of ["evt_r1", "evt_r3"]) assert.equal((await s.post(id)).status, 200);
    await waitFor("two forwards sent", async () => s.destination.received.length >= 2);
    const report = await replayStripe({
      source: "stripe",
      api: { apiKey: "sk_test_fake", apiBase: stripe.url, maxRetries: 1, rateLimitDelayMs: 10 },
      since: new Date(Date.now() - 3_600_000),
      ledger: { db: admin, ledger: ledgerContext(s.schema) },
    });
    assert.deepEqual([report.fetched, report.new, report.duplicate], [3, 1, 2]);
    await waitFor("the replayed event forwarded", async () => s.destination.received.length >= 3);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(s.destination.received.map(eventIdOf).sort(), ["evt_r1", "evt_r2", "evt_r3"]);
    const replayed = s.destination.received.find((r) => eventIdOf(r) === "evt_r2");
    assert.deepEqual(
      JSON.parse(replayed?.body ?? "{}"),
      events[1],
      "the replayed bytes, as Stripe's API gave them",
    );
  } finally {
    await stripe.close();
    await s.close();
  }
});

test("forward: a denied range refuses the dialled address before any request is sent", async () => {
  const s = await forwarding(() => 200, { deny: ["127.0.0.0/8"] });
  try {
    await s.post("evt_n1");
    await waitFor("the forward dead", async () => (await forwardsOf(s.schema))[0]?.status === "dead");
    const [m] = await forwardsOf(s.schema);
    assert.match(m?.lastError ?? "", /127\.0\.0\.1 is in a denied range/);
    assert.equal(s.destination.received.length, 0);
  } finally {
    await s.close();
  }
});

test("createHookledger refuses a forward with a non-http URL, an empty secret, a bad CIDR or http under httpsOnly, naming each field", () => {
  const make = (forward: ForwardConfig) => () =>
    createHookledger({
      connectionString: url,
      sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"], forward }],
      log: silentLogger(),
    });
  const refused = (forward: ForwardConfig, pattern: RegExp) =>
    assert.throws(
      make(forward),
      (error: unknown) => error instanceof ConfigError && pattern.test(error.message),
    );
  refused(
    { url: "ftp://x/", secret: SECRET },
    /sources\[0\]\.forward\.url: expected an http:\/\/ or https:\/\/ URL/,
  );
  refused(
    { url: "http://127.0.0.1/", secret: "" },
    /sources\[0\]\.forward\.secret: the destination's signing secret is empty/,
  );
  refused(
    { url: "http://127.0.0.1/", secret: "whsec_c2hvcnQ=" },
    /forward\.secret: a signing secret is 'whsec_' and at least 16 bytes/,
  );
  refused(
    { url: "http://127.0.0.1/", secret: SECRET, deny: ["10.0.0.0/33"] },
    /forward\.deny\[0\]: expected a CIDR range/,
  );
  refused({ url: "http://127.0.0.1/", secret: SECRET, httpsOnly: true }, /forward\.url: httpsOnly is set/);
  refused(
    { url: "http://127.0.0.1/", secret: SECRET, ordering: "fifo" as "none" },
    /forward\.ordering: expected "entity" or "none"/,
  );
  refused(
    { url: "http://127.0.0.1/", secret: SECRET, breaker: { threshold: 0 } },
    /forward\.breaker\.threshold: expected a positive whole number, got 0/,
  );
  refused(
    { url: "http://127.0.0.1/", secret: SECRET, retyr: 3 } as ForwardConfig,
    /forward\.retyr: unknown field; did you mean retry\?/,
  );
});
