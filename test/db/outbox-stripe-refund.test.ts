// docs/outbox.md, "A Stripe refund, exactly once": the snippet tagged `stripe-refund` runs as written, with a Stripe client pointed at a local
// server that answers as Stripe's API does: a new Idempotency-Key makes a refund, a repeated one replays the first
// answer (same refund, `Idempotent-Replayed: true`). The oracle is the server's side: however many requests arrive
// and however many of their answers are lost, exactly one refund exists and every request carried the message's key.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Handlers, listOutbox, type Outbox, type OutboxOptions, type OutboxSummary } from "hookledger";
import Stripe from "stripe";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { markdownSnippets } from "../helpers/snippets.js";
import { withTestWorker } from "../helpers/worker.js";

const TAG = "stripe-refund";
const DOC = fileURLToPath(new URL("../../docs/outbox.md", import.meta.url));

/** What the snippet exports. */
interface RefundSnippet {
  readonly handlers: Handlers;
  refundOutbox(stripe: Stripe, options?: OutboxOptions): Outbox;
}

/** The one `stripe-refund` snippet of docs/outbox.md. */
function refundSnippet(): string {
  const tagged = markdownSnippets(DOC).filter((s) => s.tags.includes(TAG));
  assert.equal(tagged.length, 1, `docs/outbox.md has ${tagged.length} snippets tagged ${TAG}`);
  return tagged[0]?.code ?? "";
}

let t: TestLedger;
let dir: string | undefined;
let snippet: RefundSnippet;

before(async () => {
  t = await freshLedger();
  // Inside the package, so that `hookledger` (the built dist/, through the package's own exports) and `stripe`
  // resolve as they do in an app.
  dir = mkdtempSync(join(fileURLToPath(new URL("..", import.meta.url)), ".stripe-refund-"));
  const file = join(dir, "stripe-refund.ts");
  writeFileSync(file, refundSnippet());
  snippet = (await import(pathToFileURL(file).href)) as RefundSnippet;
});
after(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await t?.drop();
});

/** One request to the fake Stripe, as it arrived and as it was answered. */
interface StripeRequest {
  readonly idempotencyKey: string | undefined;
  readonly answer: "created" | "replayed" | "refused";
  /** The refund the answer named. */
  readonly refundId: string | undefined;
  /** The connection was dropped before the answer: the refund (if any) was made, the client never heard. */
  readonly lost: boolean;
}

interface Refund {
  readonly id: string;
  readonly object: "refund";
  readonly amount: number;
  readonly payment_intent: string;
  readonly status: "succeeded";
}

/**
 * A local server standing for Stripe's `POST /v1/refunds`, idempotent as Stripe is: the first request with a key
 * makes the refund and its answer is kept; a repeated key with the same parameters gets that answer again with
 * `Idempotent-Replayed: true`, with other parameters a 400 `idempotency_error`. `lose(n)` (n from 0) drops the
 * connection of the n-th request after it has acted, before it answers.
 */
async function startFakeStripe(lose: (n: number) => boolean) {
  const refunds: Refund[] = [];
  const requests: StripeRequest[] = [];
  const kept = new Map<string, { readonly params: string; readonly refund: Refund }>();
  const header = (req: IncomingMessage, name: string) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const params = Buffer.concat(chunks).toString();
    const n = requests.length;
    const key = header(req, "idempotency-key");
    const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", "request-id": `req_${n}`, ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST" || req.url !== "/v1/refunds") {
      answer(404, { error: { type: "invalid_request_error", message: `no route ${req.method} ${req.url}` } });
      return;
    }
    const previous = key === undefined ? undefined : kept.get(key);
    let record: StripeRequest;
    if (previous && previous.params !== params) {
      record = { idempotencyKey: key, answer: "refused", refundId: undefined, lost: lose(n) };
    } else if (previous) {
      record = { idempotencyKey: key, answer: "replayed", refundId: previous.refund.id, lost: lose(n) };
    } else {
      const form = new URLSearchParams(params);
      const refund: Refund = {
        id: `re_${String(refunds.length + 1).padStart(4, "0")}`,
        object: "refund",
        amount: Number(form.get("amount")),
        payment_intent: form.get("payment_intent") ?? "",
        status: "succeeded",
      };
      refunds.push(refund);
      if (key !== undefined) kept.set(key, { params, refund });
      record = { idempotencyKey: key, answer: "created", refundId: refund.id, lost: lose(n) };
    }
    requests.push(record);
    if (record.lost) {
      req.socket.destroy();
      return;
    }
    const echo: Record<string, string> = key === undefined ? {} : { "idempotency-key": key };
    if (record.answer === "refused") {
      answer(400, {
        error: {
          type: "idempotency_error",
          message:
            "Keys for idempotent requests can only be used with the same parameters they were first used with.",
        },
      });
    } else if (record.answer === "replayed") {
      answer(200, previous?.refund, { ...echo, "idempotent-replayed": "true" });
    } else {
      answer(200, refunds.at(-1), echo);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    refunds,
    requests,
    /** A Stripe client of this server, as the app would make one for api.stripe.com. */
    client: () =>
      new Stripe("sk_test_hookledger", { host: "127.0.0.1", port, protocol: "http", telemetry: false }),
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
type FakeStripe = Awaited<ReturnType<typeof startFakeStripe>>;

// Quick retries, and a call timeout that leaves room for stripe-node's own network retries (0.5 s, then up to 1 s).
const outboxOptions: OutboxOptions = {
  timeoutMs: 5_000,
  pollIntervalMs: 100,
  retry: { maxAttempts: 10, baseDelayMs: 50, maxDelayMs: 200 },
};
const eventRetry = { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 50 };

/** A Stripe `checkout.session.completed` that paid 5.00 shipping on a 60.00 order: the snippet refunds 5.00. */
function claimCheckout(eventId: string, paymentIntent: string) {
  const payload = {
    id: eventId,
    object: "event",
    type: "checkout.session.completed",
    data: {
      object: {
        id: `cs_${eventId}`,
        object: "checkout.session",
        payment_intent: paymentIntent,
        amount_subtotal: 60_00,
        shipping_cost: { amount_subtotal: 5_00, amount_tax: 0, amount_total: 5_00, shipping_rate: "shr_1" },
      },
    },
  };
  return claimTestEvent(t.pool, t.ledger, {
    source: "stripe",
    id: eventId,
    type: "checkout.session.completed",
    payload,
  });
}

async function messagesOf(eventId: string): Promise<OutboxSummary[]> {
  return (await listOutbox(t.pool, t.ledger, { source: "stripe" }, 100)).filter((m) => m.eventId === eventId);
}

/** Waits until the event's message is no longer pending (sent or dead). */
function untilSettled(eventId: string) {
  return waitFor(`the refund message of ${eventId} sent or dead`, async () => {
    const [m] = await messagesOf(eventId);
    return m !== undefined && m.status !== "pending";
  });
}

/** The oracle: one message, `sent`; one refund of 5.00 on the server; every request under the message's key. */
async function assertOneRefund(stripe: FakeStripe, eventId: string, paymentIntent: string) {
  const messages = await messagesOf(eventId);
  assert.equal(messages.length, 1, "one outbox message");
  const [m] = messages;
  assert.ok(m);
  assert.equal(m.sender, "refund");
  assert.equal(m.status, "sent", `message ${m.status} after ${m.attempts} attempts: ${m.lastError}`);
  assert.deepEqual(
    stripe.refunds.map((r) => ({ payment_intent: r.payment_intent, amount: r.amount })),
    [{ payment_intent: paymentIntent, amount: 5_00 }],
    "exactly one refund on Stripe's side",
  );
  assert.ok(stripe.requests.length >= 1);
  assert.deepEqual(
    stripe.requests.map((r) => r.idempotencyKey),
    stripe.requests.map(() => m.idempotencyKey),
    "every request carried the message's idempotency key",
  );
  // Every answer that got through named the one refund.
  const heard = stripe.requests.filter((r) => !r.lost);
  assert.ok(heard.length >= 1, "an answer got through");
  assert.deepEqual(
    heard.map((r) => r.refundId),
    heard.map(() => stripe.refunds[0]?.id),
  );
  return m;
}

test("refunds.create whose first answer is lost after Stripe refunded: retried under the message's key, replayed, one refund, message sent", async (tc) => {
  const stripe = await startFakeStripe((n) => n === 0);
  try {
    const outbox = snippet.refundOutbox(stripe.client(), outboxOptions);
    await claimCheckout("evt_refund_lost", "pi_lost");
    const options = { outbox, pollIntervalMs: 100, retry: eventRetry };
    await withTestWorker(t, t.newPool("work", 4), snippet.handlers, options, () =>
      untilSettled("evt_refund_lost"),
    );
    await assertOneRefund(stripe, "evt_refund_lost", "pi_lost");
    assert.equal(stripe.requests[0]?.answer, "created");
    assert.equal(stripe.requests[0]?.lost, true);
    assert.ok(stripe.requests.length >= 2, "the lost answer was retried");
    assert.ok(stripe.requests.slice(1).every((r) => r.answer === "replayed"));
    tc.diagnostic(
      `${stripe.requests.length} requests: ${stripe.requests.map((r) => `${r.answer}${r.lost ? " (lost)" : ""}`).join(", ")}`,
    );
  } finally {
    await stripe.close();
  }
});

test("refunds.create whose outbox attempt fails (every answer of stripe-node's retries lost): the next attempt sends the same key, one refund, message sent", async (tc) => {
  let losing = true;
  const stripe = await startFakeStripe(() => losing);
  try {
    const outbox = snippet.refundOutbox(stripe.client(), outboxOptions);
    await claimCheckout("evt_refund_attempts", "pi_attempts");
    const options = { outbox, pollIntervalMs: 100, retry: eventRetry };
    await withTestWorker(t, t.newPool("work", 4), snippet.handlers, options, async () => {
      await waitFor("an outbox attempt that failed", async () => {
        const [m] = await messagesOf("evt_refund_attempts");
        return m !== undefined && m.attempts >= 1 && m.lastError !== null;
      });
      losing = false;
      await untilSettled("evt_refund_attempts");
    });
    const m = await assertOneRefund(stripe, "evt_refund_attempts", "pi_attempts");
    assert.ok(m.attempts >= 2, `sent on attempt ${m.attempts}`);
    assert.equal(stripe.requests[0]?.answer, "created");
    assert.ok(stripe.requests.slice(1).every((r) => r.answer === "replayed"));
    tc.diagnostic(`${stripe.requests.length} requests over ${m.attempts} outbox attempts`);
  } finally {
    await stripe.close();
  }
});

test("ctx.outbox.send of a refund in an attempt that then throws: rolled back, the next attempt's message makes one refund, sent", async () => {
  const stripe = await startFakeStripe(() => false);
  try {
    const decide = snippet.handlers.find("stripe", "checkout.session.completed");
    assert.ok(decide, "the snippet handles checkout.session.completed");
    let runs = 0;
    const handlers = new Handlers().on("stripe", "checkout.session.completed", async (ctx) => {
      runs++;
      await decide(ctx);
      if (ctx.event.attempt === 1)
        throw new Error("the order's own write failed after the refund was decided");
    });
    const outbox = snippet.refundOutbox(stripe.client(), outboxOptions);
    await claimCheckout("evt_refund_rollback", "pi_rollback");
    const options = { outbox, pollIntervalMs: 100, retry: eventRetry };
    await withTestWorker(t, t.newPool("work", 4), handlers, options, () =>
      untilSettled("evt_refund_rollback"),
    );
    assert.equal(runs, 2);
    await assertOneRefund(stripe, "evt_refund_rollback", "pi_rollback");
    assert.equal(stripe.requests.length, 1);
  } finally {
    await stripe.close();
  }
});
