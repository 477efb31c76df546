// docs/architecture.md §4 through Fastify 5 and Fastify 4 over real HTTP: the plugin's raw parser wins inside its context, so a JSON body
// verifies next to the app's own parsers, and Fastify's bodyLimit never undercuts the source's cap.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { FastifyInstance } from "fastify";
import { createReceiver } from "hookledger";
import { createFastifyHandler } from "hookledger/fastify";
import { createLogger, silentLogger } from "hookledger";
import { stripeProvider } from "hookledger";
import { fastifyMajors } from "../helpers/frameworks.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import {
  ledgerCounts,
  NOW_S,
  type Reply,
  STRIPE_CAP,
  STRIPE_SECRETS,
  send,
  stripeBody,
  stripeHeaders,
  postDeclaredTooLarge,
  postChunkedPastCap,
} from "../helpers/http.js";

const BULK_CAP = 2 * 1024 * 1024;

for (const [major, Fastify] of fastifyMajors)
  describe(major, () => {
    let t: TestLedger;
    const apps: FastifyInstance[] = [];
    const logged: Record<string, unknown>[] = [];
    const log = createLogger({ destination: { write: (line: string) => logged.push(JSON.parse(line)) } });
    let url: string;
    let prefixedUrl: string;
    let consumingUrl: string;

    async function start(app: FastifyInstance): Promise<string> {
      apps.push(app);
      return app.listen({ port: 0, host: "127.0.0.1" });
    }

    before(async () => {
      t = await freshLedger();
      const receiver = createReceiver({
        sources: [
          { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
          { name: "bulk", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: BULK_CAP },
        ],
        db: t.newPool("ingest"),
        ledger: t.ledger,
        log: silentLogger(),
        now: () => NOW_S * 1000,
      });

      const app = Fastify();
      // The app's own JSON parser, registered before the plugin: it must not reach hookledger's routes.
      app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
        done(null, { parsedByTheApp: JSON.parse(body as string) });
      });
      await app.register(createFastifyHandler(receiver, { log }));
      app.post("/orders", async (request) => request.body);
      url = await start(app);

      const prefixed = Fastify();
      await prefixed.register(createFastifyHandler(receiver, { log }), { prefix: "/api" });
      prefixedUrl = await start(prefixed);

      const consuming = Fastify();
      // A hook that reads the body and hands nothing on: the plugin cannot see the bytes any more.
      consuming.addHook("preParsing", async (_request, _reply, payload) => {
        for await (const _ of payload) {
        }
      });
      await consuming.register(createFastifyHandler(receiver, { log }));
      consumingUrl = await start(consuming);
    });

    after(async () => {
      for (const app of apps) await app.close();
      await t?.drop();
    });

    const counts = (id: string, source?: string) => ledgerCounts(t.pool, t.ledger, id, source);

    function post(
      base: string,
      payload: string,
      headers = stripeHeaders(payload),
      source = "stripe",
    ): Promise<Reply> {
      return send(`${base}/webhooks/${source}`, { headers, body: payload });
    }

    function assertJson(reply: Reply, status: number, expected: Record<string, unknown>): void {
      assert.equal(reply.status, status, reply.text);
      assert.match(String(reply.headers["content-type"]), /^application\/json/);
      assert.deepEqual(JSON.parse(reply.text), expected);
    }

    test("fastify: POST a JSON event next to the app's JSON parser → 200 accepted, body byte-exact", async () => {
      const payload = stripeBody("evt_fastify_new");
      assertJson(await post(url, payload), 200, { status: "accepted", id: "evt_fastify_new" });
      const { rows } = await t.pool.query<{ status: string; body: Buffer }>(
        `select status, body from ${t.ledger.s}.event_records where source = 'stripe' and dedupe_key = 'evt_fastify_new'`,
      );
      assert.equal(rows[0]?.status, "pending");
      assert.ok(rows[0]?.body.equals(Buffer.from(payload)), "the stored body is not the bytes sent");
      const orders = await send(`${url}/orders`, {
        headers: { "content-type": "application/json" },
        body: '{"sku":"A-1"}',
      });
      assertJson(orders, 200, { parsedByTheApp: { sku: "A-1" } });
    });

    test("fastify: POST the same event again → 200 duplicate, one row, duplicates.count 1", async () => {
      const payload = stripeBody("evt_fastify_dup");
      assertJson(await post(url, payload), 200, { status: "accepted", id: "evt_fastify_dup" });
      assertJson(await post(url, payload), 200, { status: "duplicate", id: "evt_fastify_dup" });
      assert.deepEqual(await counts("evt_fastify_dup", "stripe"), { events: 1, duplicates: 1 });
    });

    test("fastify: any Content-Type, or none, reaches hookledger (no Fastify 415): text/plain, form, absent", async () => {
      for (const [id, type] of [
        ["evt_fastify_text", "text/plain"],
        ["evt_fastify_form", "application/x-www-form-urlencoded"],
        ["evt_fastify_none", undefined],
      ] as const) {
        const payload = stripeBody(id);
        const { "content-type": _, ...rest } = stripeHeaders(payload);
        const reply = await post(url, payload, type === undefined ? rest : { ...rest, "content-type": type });
        assertJson(reply, 200, { status: "accepted", id });
      }
    });

    test("fastify: POST with a timestamp 301 s old → 401 uniform body; unknown source → 404; no row", async () => {
      const payload = stripeBody("evt_fastify_401");
      assertJson(await post(url, payload, stripeHeaders(payload, undefined, NOW_S - 301)), 401, {
        error: "unauthorized",
        message: "signature verification failed",
      });
      const unknown = await post(url, payload, stripeHeaders(payload), "stripe-eu");
      assert.equal(unknown.status, 404);
      assert.equal(JSON.parse(unknown.text).error, "unknown_source");
      assert.deepEqual(await counts("evt_fastify_401"), { events: 0, duplicates: 0 });
    });

    test("fastify: GET, PUT or DELETE → hookledger's 405 with Allow: POST", async () => {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const reply = await send(`${url}/webhooks/stripe`, { method });
        assertJson(reply, 405, { error: "method_not_allowed", message: "webhook deliveries must use POST" });
        assert.equal(reply.headers.allow, "POST", method);
      }
    });

    test("fastify: POST declaring Content-Length 10 000 000 → 413 before reading, connection closed, no row", {
      timeout: 20_000,
    }, async () => {
      const answer = await postDeclaredTooLarge(`${url}/webhooks/stripe`, "evt_fastify_big");
      assert.equal(answer.status, 413, answer.text);
      assert.equal(JSON.parse(answer.text).error, "payload_too_large");
      assert.equal(answer.headers.connection, "close");
      assert.deepEqual(await counts("evt_fastify_big"), { events: 0, duplicates: 0 });
    });

    test("fastify: POST chunked 3 KB then 3 KB more, never ending → 413 at the crossing byte", {
      timeout: 20_000,
    }, async () => {
      const answer = await postChunkedPastCap(`${url}/webhooks/stripe`, "evt_fastify_chunked");
      assert.equal(answer.status, 413, answer.text);
      assert.equal(JSON.parse(answer.text).error, "payload_too_large");
      assert.equal(answer.headers.connection, "close");
    });

    test("fastify: a 1.5 MiB body to a source capped at 2 MiB → accepted (Fastify's 1 MiB bodyLimit does not apply)", async () => {
      const payload = stripeBody("evt_fastify_bulk", { padding: "x".repeat(1.5 * 1024 * 1024) });
      assertJson(await post(url, payload, stripeHeaders(payload), "bulk"), 200, {
        status: "accepted",
        id: "evt_fastify_bulk",
      });
      // The app's own routes keep Fastify's limit.
      const orders = await send(`${url}/orders`, {
        headers: { "content-type": "application/json" },
        body: payload,
      });
      assert.equal(orders.status, 413);
    });

    test("fastify: POST with Content-Encoding gzip → 415, no row", async () => {
      const payload = stripeBody("evt_fastify_gzip");
      const reply = await post(url, payload, { ...stripeHeaders(payload), "content-encoding": "gzip" });
      assertJson(reply, 415, { error: "unsupported_encoding", message: "Content-Encoding must be identity" });
      assert.deepEqual(await counts("evt_fastify_gzip"), { events: 0, duplicates: 0 });
    });

    test("fastify: register(…, { prefix: '/api' }) answers POST /api/webhooks/:source", async () => {
      const payload = stripeBody("evt_fastify_prefixed");
      const reply = await send(`${prefixedUrl}/api/webhooks/stripe`, {
        headers: stripeHeaders(payload),
        body: payload,
      });
      assertJson(reply, 200, { status: "accepted", id: "evt_fastify_prefixed" });
    });

    test("fastify: a preParsing hook that reads the body first → 500 naming cause and fix, an error log line, no row", async () => {
      const payload = stripeBody("evt_fastify_consumed");
      logged.length = 0;
      const reply = await post(consumingUrl, payload);
      assert.equal(reply.status, 500, reply.text);
      assert.equal(JSON.parse(reply.text).error, "body_already_parsed");
      const line = logged.find((l) => l.result === "body_already_parsed");
      assert.ok(line, "no log line");
      assert.match(String(line.msg), /Fix: register hookledger's plugin without a preParsing/);
      assert.deepEqual(await counts("evt_fastify_consumed"), { events: 0, duplicates: 0 });
    });
  });
