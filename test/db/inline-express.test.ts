// docs/architecture.md §7 through createExpressGuard, in Express 5 and Express 4, with the real inline guard on real Postgres
// over real HTTP: it settles on a success, fails on an error answer, and refuses a body a parser consumed first.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import type { ErrorRequestHandler, Express, Request, Response } from "express";
import { createExpressGuard } from "hookledger/express";
import Stripe from "stripe";
import type { InlineTicket } from "hookledger";
import { silentLogger } from "hookledger";
import { STRIPE_SECRETS, send, stripeBody, stripeHeaders, postStripe } from "../helpers/http.js";
import { expressMajors } from "../helpers/frameworks.js";
import { inlineBed } from "../helpers/inline-bed.js";

const stripe = new Stripe("sk_test_x");

const post = postStripe;

for (const [major, express] of expressMajors)
  describe(major, () => {
    const bed = inlineBed();
    const { guard, row, settled, assertDuplicate, failed } = bed;

    async function listenExpress(app: Express): Promise<string> {
      const server = await new Promise<Server>((resolve) => {
        const s = app.listen(0, "127.0.0.1", () => resolve(s));
      });
      bed.closeLater(async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      });
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
      const handler = (_req: Request, res: Response) => {
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
  });
