// docs/architecture.md §7 through createFastifyGuard, in Fastify 5 and Fastify 4, with the real inline guard on real Postgres
// over real HTTP: the route keeps its own parser, the event settles on a success and fails on a thrown handler.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { createFastifyGuard, inlineTicket } from "hookledger/fastify";
import { githubHeaders, send, stripeBody, postStripe } from "../helpers/http.js";
import { fastifyMajors } from "../helpers/frameworks.js";
import { inlineBed } from "../helpers/inline-bed.js";

const post = postStripe;

for (const [major, Fastify] of fastifyMajors)
  describe(major, () => {
    const bed = inlineBed();
    const { guard, row, settled, assertDuplicate, failed } = bed;

    async function listenFastify(app: FastifyInstance): Promise<string> {
      bed.closeLater(() => app.close());
      return app.listen({ port: 0, host: "127.0.0.1" });
    }

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
  });
