// docs/architecture.md §7 through the framework middlewares with the real inline guard on real Postgres: Express and Fastify
// over real HTTP, Hono through app.request(). Each settles on a success, fails on an error answer, and refuses a
// body that a parser consumed first.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import express, { type ErrorRequestHandler, type Express } from "express";
import Fastify, { type FastifyInstance } from "fastify";
import { Hono } from "hono";
import Stripe from "stripe";
import type { Pool } from "../../src/db/pool.js";
import { createExpressGuard } from "../../src/adapters/express/guard.js";
import { createFastifyGuard, inlineTicket } from "../../src/adapters/fastify/guard.js";
import { createFetchGuard } from "../../src/adapters/web/guard.js";
import { createInlineGuard } from "../../src/edge/inline/guard.js";
import type { InlineMode, InlineTicket } from "../../src/edge/inline/types.js";
import { silentLogger } from "../../src/log.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import {
  NOW_S,
  type Reply,
  STRIPE_SECRETS,
  send,
  stripeBody,
  stripeHeaders,
  githubHeaders,
} from "../helpers/http.js";
import { inlineSources } from "../helpers/inline.js";

let t: TestLedger;
let ingest: Pool;
const closers: (() => Promise<void>)[] = [];
const stripe = new Stripe("sk_test_x");

before(async () => {
  t = await freshLedger();
  ingest = t.newPool("ingest");
});

after(async () => {
  for (const close of closers) await close();
  await t?.drop();
});

const guard = (mode: InlineMode) =>
  createInlineGuard({
    sources: inlineSources(),
    db: ingest,
    ledger: t.ledger,
    log: silentLogger(),
    now: () => NOW_S * 1000,
    mode,
  });

async function listenExpress(app: Express): Promise<string> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function listenFastify(app: FastifyInstance): Promise<string> {
  closers.push(() => app.close());
  return app.listen({ port: 0, host: "127.0.0.1" });
}

/** A delivery signed again (`ageS` seconds ago), as a provider signs each retry. */
const post = (url: string, payload: string, ageS = 0): Promise<Reply> =>
  send(url, { headers: stripeHeaders(payload, STRIPE_SECRETS[0], NOW_S - ageS), body: payload });

async function row(id: string) {
  const { rows } = await t.pool.query<{ status: string; attempts: number; last_error: string | null }>(
    `select status, attempts, last_error from ${t.ledger.s}.events where source = 'stripe' and dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

const until = (id: string, check: (r: Awaited<ReturnType<typeof row>>) => boolean) =>
  waitFor(`${id} to reach its state`, async () => check(await row(id)), 10_000);
const settled = (id: string) => until(id, (r) => r?.status === "settled");
const failed = (id: string) => until(id, (r) => r?.status === "inline" && r.attempts === 1);

function assertDuplicate(reply: Reply, id: string): void {
  assert.equal(reply.status, 200, reply.text);
  assert.deepEqual(JSON.parse(reply.text), { status: "duplicate", id });
}

test("createExpressGuard (enforce): req.body is the payload, res.locals.hookledger the ticket; settles; the duplicate skips the handler", async () => {
  const calls: unknown[] = [];
  const app = express();
  app.use(express.raw({ type: "application/octet-stream" })); // parses nothing these deliveries send
  app.post(
    "/stripe/webhook",
    createExpressGuard(guard("enforce"), { source: "stripe" }),
    express.json(),
    (req, res) => {
      calls.push(req.body);
      assert.equal((res.locals.hookledger as InlineTicket).event.payload, req.body);
      res.status(200).send("handled");
    },
  );
  const url = `${await listenExpress(app)}/stripe/webhook`;
  const payload = stripeBody("evt_ix_enforce");
  const first = await post(url, payload);
  assert.equal(first.text, "handled");
  await settled("evt_ix_enforce");
  assertDuplicate(await post(url, payload, 30), "evt_ix_enforce");
  assert.deepEqual(calls, [JSON.parse(payload)]);
});

test("createExpressGuard (shadow): a duplicate still reaches the handler with wouldSkip", async () => {
  const seen: boolean[] = [];
  const app = express();
  app.post("/webhooks/:source", createExpressGuard(guard("shadow")), (_req, res) => {
    seen.push((res.locals.hookledger as InlineTicket).wouldSkip);
    res.sendStatus(204);
  });
  const url = `${await listenExpress(app)}/webhooks/stripe`;
  const payload = stripeBody("evt_ix_shadow");
  assert.equal((await post(url, payload)).status, 204);
  await settled("evt_ix_shadow");
  assert.equal((await post(url, payload, 30)).status, 204);
  assert.deepEqual(seen, [false, true]);
});

test("createExpressGuard: next(err) → the row fails with the error its middleware recorded; the retry runs it again and settles", async () => {
  let attempt = 0;
  const app = express();
  app.post(
    "/stripe/webhook",
    createExpressGuard(guard("enforce"), { source: "stripe" }),
    (_req, res, next) => {
      if (++attempt === 1) return next(new Error("inventory service down"));
      res.sendStatus(200);
    },
  );
  const recordCause: ErrorRequestHandler = (error: Error, _req, res, _next) => {
    void (res.locals.hookledger as InlineTicket | undefined)?.fail(error);
    res.status(500).end();
  };
  app.use(recordCause);
  const url = `${await listenExpress(app)}/stripe/webhook`;
  const payload = stripeBody("evt_ix_fail");
  assert.equal((await post(url, payload)).status, 500);
  await failed("evt_ix_fail");
  assert.equal((await row("evt_ix_fail"))?.last_error, "inventory service down");
  assert.equal((await post(url, payload, 60)).status, 200);
  await settled("evt_ix_fail");
  assert.equal(attempt, 2);
});

test("createExpressGuard: express.raw() in front → req.body stays the exact Buffer, which the handler verifies itself", async () => {
  const app = express();
  const g = guard("enforce");
  app.post(
    "/stripe/webhook",
    express.raw({ type: "application/json" }),
    createExpressGuard(g, { source: "stripe" }),
    (req, res) => {
      assert.ok(Buffer.isBuffer(req.body));
      const event = stripe.webhooks.constructEvent(
        req.body,
        String(req.headers["stripe-signature"]),
        STRIPE_SECRETS[0],
        300,
      );
      res.json({ verifiedAgain: event.id });
    },
  );
  const url = `${await listenExpress(app)}/stripe/webhook`;
  // Stripe's library checks its own clock: sign this one now.
  const payload = stripeBody("evt_ix_raw");
  const reply = await send(url, {
    headers: stripeHeaders(payload, STRIPE_SECRETS[0], Math.floor(Date.now() / 1000)),
    body: payload,
  });
  assert.deepEqual(JSON.parse(reply.text), { verifiedAgain: "evt_ix_raw" });
  await settled("evt_ix_raw");
});

test("createExpressGuard: express.json() mounted first → 500 naming the fix, handler not called, no row; 401 and 413 refuse without it", async () => {
  let called = false;
  const handler = (_req: express.Request, res: express.Response) => {
    called = true;
    res.sendStatus(200);
  };
  const jsonFirst = express();
  jsonFirst.use(express.json());
  jsonFirst.post(
    "/stripe/webhook",
    createExpressGuard(guard("enforce"), { source: "stripe", log: silentLogger() }),
    handler,
  );
  const parsed = await post(
    `${await listenExpress(jsonFirst)}/stripe/webhook`,
    stripeBody("evt_ix_json_first"),
  );
  assert.equal(parsed.status, 500);
  assert.match(JSON.parse(parsed.text).fix, /before express\.json\(\)/);
  assert.equal(await row("evt_ix_json_first"), undefined);

  const app = express();
  app.post("/stripe/webhook", createExpressGuard(guard("enforce"), { source: "stripe" }), handler);
  const url = `${await listenExpress(app)}/stripe/webhook`;
  assert.equal((await post(url, stripeBody("evt_ix_401"), 301)).status, 401);
  const big = stripeBody("evt_ix_413", { padding: "x".repeat(5000) });
  assert.equal((await post(url, big)).status, 413);
  assert.equal(called, false);
  assert.equal(await row("evt_ix_401"), undefined);
  assert.equal(await row("evt_ix_413"), undefined);
});

test("createFastifyGuard (enforce): the route keeps its JSON parser, the ticket is at hand; settles; the duplicate skips the handler", async () => {
  const calls: unknown[] = [];
  const app = Fastify();
  app.post(
    "/stripe/webhook",
    { ...createFastifyGuard(guard("enforce"), { source: "stripe" }) },
    async (request) => {
      calls.push(request.body);
      assert.equal(inlineTicket(request)?.event.dedupeKey, "evt_if_enforce");
      return { handled: true };
    },
  );
  const url = `${await listenFastify(app)}/stripe/webhook`;
  const payload = stripeBody("evt_if_enforce");
  assert.deepEqual(JSON.parse((await post(url, payload)).text), { handled: true });
  await settled("evt_if_enforce");
  assertDuplicate(await post(url, payload, 30), "evt_if_enforce");
  assert.deepEqual(calls, [JSON.parse(payload)]);
});

test("createFastifyGuard: a buffer parser (Stripe's recipe) and a handler that throws → 500, the row fails with its error; the retry settles", async () => {
  let attempt = 0;
  const app = Fastify({ logger: false });
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, body, done) =>
    done(null, body),
  );
  app.post(
    "/stripe/webhook",
    { ...createFastifyGuard(guard("enforce"), { source: "stripe" }) },
    async (request) => {
      assert.ok(Buffer.isBuffer(request.body));
      if (++attempt === 1) throw new Error("ledger of orders locked");
      return { ok: true };
    },
  );
  const url = `${await listenFastify(app)}/stripe/webhook`;
  const payload = stripeBody("evt_if_fail");
  assert.equal((await post(url, payload)).status, 500);
  await failed("evt_if_fail");
  assert.equal((await row("evt_if_fail"))?.last_error, "ledger of orders locked");
  assert.equal((await post(url, payload, 60)).status, 200);
  await settled("evt_if_fail");
  assert.equal((await post(url, stripeBody("evt_if_401"), 301)).status, 401);
  assert.equal(await row("evt_if_401"), undefined);
  assert.equal(attempt, 2);
});

test("createFastifyGuard: a parser that passes the stream on (200 KB, past the stream buffers) → verified, and the handler reads the same bytes", async () => {
  const app = Fastify();
  app.addContentTypeParser("application/json", (_request, payload, done) => done(null, payload));
  app.post(
    "/github/webhook",
    { ...createFastifyGuard(guard("enforce"), { source: "github" }) },
    async (request) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request.body as AsyncIterable<Buffer>) chunks.push(chunk);
      return { bytes: Buffer.concat(chunks).length };
    },
  );
  const url = `${await listenFastify(app)}/github/webhook`;
  const payload = JSON.stringify({ action: "opened", padding: "x".repeat(200_000) });
  const reply = await send(url, {
    headers: await githubHeaders(payload, "9d3e1c2a-0000-4000-8000-00000000f00d", "issues"),
    body: payload,
  });
  assert.deepEqual(JSON.parse(reply.text), { bytes: Buffer.byteLength(payload) });
});

test("createFetchGuard under Hono: the handler reads the same bytes again; settles; a 500 answer fails the row; JSON read first → 500", async () => {
  const seen: string[] = [];
  const guarded = createFetchGuard(
    guard("enforce"),
    async (request, ticket) => {
      seen.push(await request.text());
      if (ticket.event.dedupeKey === "evt_ih_fail") return new Response("no", { status: 500 });
      return Response.json({ handled: ticket.event.dedupeKey });
    },
    { source: "stripe", log: silentLogger() },
  );
  const app = new Hono();
  app.use("/parsed/*", async (c, next) => {
    await c.req.json();
    await next();
  });
  app.post("/stripe/webhook", (c) => guarded(c.req.raw));
  app.post("/parsed/stripe", (c) => guarded(c.req.raw));
  const request = (path: string, payload: string) =>
    app.request(path, { method: "POST", headers: stripeHeaders(payload), body: payload });

  const payload = stripeBody("evt_ih_ok");
  assert.deepEqual(await (await request("/stripe/webhook", payload)).json(), { handled: "evt_ih_ok" });
  assert.deepEqual(seen, [payload]);
  await settled("evt_ih_ok");
  assert.deepEqual(await (await request("/stripe/webhook", payload)).json(), {
    status: "duplicate",
    id: "evt_ih_ok",
  });

  assert.equal((await request("/stripe/webhook", stripeBody("evt_ih_fail"))).status, 500);
  await failed("evt_ih_fail");
  assert.equal((await row("evt_ih_fail"))?.last_error, "the handler answered 500");

  const parsed = await request("/parsed/stripe", stripeBody("evt_ih_parsed"));
  assert.equal(parsed.status, 500);
  assert.equal(((await parsed.json()) as { error: string }).error, "body_already_parsed");
  assert.equal(await row("evt_ih_parsed"), undefined);
  assert.equal(seen.length, 2);
});
