// docs/architecture.md §7 in Hono over real HTTP (@hono/node-server), with the real inline guard on real Postgres:
// createHonoGuard in front of an existing handler, and createFetchGuard wrapped in a route.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { createAdaptorServer } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { createFetchGuard } from "hookledger";
import { createHonoGuard, type HonoGuardEnv } from "hookledger/hono";
import Stripe from "stripe";
import { silentLogger } from "hookledger";
import { STRIPE_SECRETS, send, stripeBody, stripeHeaders, postStripe } from "../helpers/http.js";
import { inlineBed } from "../helpers/inline-bed.js";

const bed = inlineBed();
const stripe = new Stripe("sk_test_x");

async function listen(app: Hono<HonoGuardEnv>): Promise<string> {
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  bed.closeLater(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const post = postStripe;

const failed = bed.failed;

test("createHonoGuard (enforce): the handler reads the verified bytes through c.req.json/text/arrayBuffer and c.req.raw, the ticket through c.get; settles; the duplicate skips it", async () => {
  const calls: unknown[] = [];
  const app = new Hono<HonoGuardEnv>();
  app.post("/stripe/webhook", createHonoGuard(bed.guard("enforce"), { source: "stripe" }), async (c) => {
    const text = await c.req.text();
    const bytes = Buffer.from(await c.req.arrayBuffer());
    const raw = await c.req.raw.text();
    const json = await c.req.json();
    calls.push(json);
    const ticket = c.get("hookledger");
    assert.deepEqual(ticket.event.payload, json);
    return c.json({ text, raw, bytes: bytes.toString("utf8"), wouldSkip: ticket.wouldSkip });
  });
  const url = `${await listen(app)}/stripe/webhook`;
  const payload = stripeBody("evt_hg_enforce");
  const first = await post(url, payload);
  assert.equal(first.status, 200, first.text);
  assert.deepEqual(JSON.parse(first.text), { text: payload, raw: payload, bytes: payload, wouldSkip: false });
  await bed.settled("evt_hg_enforce");
  bed.assertDuplicate(await post(url, payload, 30), "evt_hg_enforce");
  assert.deepEqual(calls, [JSON.parse(payload)]);
});

test("createHonoGuard: the existing handler still verifies with Stripe's library over c.req.text()", async () => {
  const app = new Hono<HonoGuardEnv>();
  app.post("/stripe/webhook", createHonoGuard(bed.guard("enforce"), { source: "stripe" }), async (c) => {
    const signature = c.req.header("stripe-signature") ?? "";
    const event = stripe.webhooks.constructEvent(await c.req.text(), signature, STRIPE_SECRETS[0], 300);
    return c.json({ verifiedAgain: event.id });
  });
  const url = `${await listen(app)}/stripe/webhook`;
  // Stripe's library checks its own clock: sign this one now.
  const payload = stripeBody("evt_hg_stripe");
  const reply = await send(url, {
    headers: stripeHeaders(payload, STRIPE_SECRETS[0], Math.floor(Date.now() / 1000)),
    body: payload,
  });
  assert.deepEqual(JSON.parse(reply.text), { verifiedAgain: "evt_hg_stripe" });
  await bed.settled("evt_hg_stripe");
});

test("createHonoGuard (shadow) on /webhooks/:source: a duplicate still reaches the handler with wouldSkip", async () => {
  const seen: boolean[] = [];
  const app = new Hono<HonoGuardEnv>();
  app.post("/webhooks/:source", createHonoGuard(bed.guard("shadow")), (c) => {
    seen.push(c.get("hookledger").wouldSkip);
    return c.body(null, 204);
  });
  const url = `${await listen(app)}/webhooks/stripe`;
  const payload = stripeBody("evt_hg_shadow");
  assert.equal((await post(url, payload)).status, 204);
  await bed.settled("evt_hg_shadow");
  assert.equal((await post(url, payload, 30)).status, 204);
  assert.deepEqual(seen, [false, true]);
});

test("createHonoGuard: a handler that throws → the app's onError answers, the row fails with the error; a 500 answer fails it too; the retry settles", async () => {
  let attempt = 0;
  const app = new Hono<HonoGuardEnv>();
  app.onError((error, c) => c.text(`oops: ${error.message}`, 500));
  app.post("/stripe/webhook", createHonoGuard(bed.guard("enforce"), { source: "stripe" }), (c) => {
    attempt++;
    if (attempt === 1) throw new Error("inventory service down");
    if (attempt === 2) return c.text("not now", 503);
    return c.text("ok");
  });
  const url = `${await listen(app)}/stripe/webhook`;
  const payload = stripeBody("evt_hg_fail");
  const thrown = await post(url, payload);
  assert.equal(thrown.status, 500);
  assert.equal(thrown.text, "oops: inventory service down");
  await failed("evt_hg_fail");
  assert.equal((await bed.row("evt_hg_fail"))?.last_error, "inventory service down");
  assert.equal((await post(url, payload, 60)).status, 503);
  await failed("evt_hg_fail", 2);
  assert.equal((await bed.row("evt_hg_fail"))?.last_error, "the handler answered 503");
  assert.equal((await post(url, payload, 90)).status, 200);
  await bed.settled("evt_hg_fail");
  assert.equal(attempt, 3);
});

test("createHonoGuard: 401 and 413 refuse without the handler; c.req.json() read first → 500 naming the fix; c.req.arrayBuffer() first → verified", async () => {
  let called = 0;
  const app = new Hono<HonoGuardEnv>();
  app.use("/parsed/*", async (c, next) => {
    await c.req.json();
    await next();
  });
  app.use("/bytes/*", async (c, next) => {
    await c.req.arrayBuffer();
    await next();
  });
  const guarded = createHonoGuard(bed.guard("enforce"), { log: silentLogger() });
  const handler = async (c: Context<HonoGuardEnv>) => {
    called++;
    return c.text(await c.req.text());
  };
  app.post("/webhooks/:source", guarded, handler);
  app.post("/parsed/:source", guarded, handler);
  app.post("/bytes/:source", guarded, handler);
  const base = await listen(app);

  assert.equal((await post(`${base}/webhooks/stripe`, stripeBody("evt_hg_401"), 301)).status, 401);
  const big = stripeBody("evt_hg_413", { padding: "x".repeat(5000) });
  assert.equal((await post(`${base}/webhooks/stripe`, big)).status, 413);
  const parsed = await post(`${base}/parsed/stripe`, stripeBody("evt_hg_parsed"));
  assert.equal(parsed.status, 500);
  const body = JSON.parse(parsed.text) as { error: string; fix: string };
  assert.equal(body.error, "body_already_parsed");
  assert.match(body.fix, /c\.req\.arrayBuffer\(\) is fine/);
  assert.equal(called, 0);
  for (const id of ["evt_hg_401", "evt_hg_413", "evt_hg_parsed"]) assert.equal(await bed.row(id), undefined);

  const payload = stripeBody("evt_hg_bytes");
  const bytes = await post(`${base}/bytes/stripe`, payload);
  assert.equal(bytes.text, payload);
  await bed.settled("evt_hg_bytes");
});

test("createFetchGuard as a Hono route: the handler reads the same bytes again; settles; a 500 answer fails the row; JSON read first → 500", async () => {
  const seen: string[] = [];
  const guarded = createFetchGuard(
    bed.guard("enforce"),
    async (request, ticket) => {
      seen.push(await request.text());
      if (ticket.event.dedupeKey === "evt_hf_fail") return new Response("no", { status: 500 });
      return Response.json({ handled: ticket.event.dedupeKey });
    },
    { source: "stripe", log: silentLogger() },
  );
  const app = new Hono<HonoGuardEnv>();
  app.use("/parsed/*", async (c, next) => {
    await c.req.json();
    await next();
  });
  app.post("/stripe/webhook", (c) => guarded(c.req.raw));
  app.post("/parsed/stripe", (c) => guarded(c.req.raw));
  const url = `${await listen(app)}/stripe/webhook`;

  const payload = stripeBody("evt_hf_ok");
  assert.deepEqual(JSON.parse((await post(url, payload)).text), { handled: "evt_hf_ok" });
  assert.deepEqual(seen, [payload]);
  await bed.settled("evt_hf_ok");
  bed.assertDuplicate(await post(url, payload, 30), "evt_hf_ok");

  assert.equal((await post(url, stripeBody("evt_hf_fail"))).status, 500);
  await failed("evt_hf_fail");
  assert.equal((await bed.row("evt_hf_fail"))?.last_error, "the handler answered 500");

  const parsed = await post(url.replace("/stripe/webhook", "/parsed/stripe"), stripeBody("evt_hf_parsed"));
  assert.equal(parsed.status, 500);
  assert.equal((JSON.parse(parsed.text) as { error: string }).error, "body_already_parsed");
  assert.equal(await bed.row("evt_hf_parsed"), undefined);
  assert.equal(seen.length, 2);
});
