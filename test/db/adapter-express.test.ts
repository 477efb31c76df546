// docs/architecture.md §4 through Express 5 and Express 4 over real HTTP: the same answers as node:http, and a body parser mounted first is
// answered 500 with its cause and fix (and logged), never a silent signature failure.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Express } from "express";
import { assertNoBodyParserBefore, createExpressHandler } from "hookledger/express";
import { createLogger } from "hookledger";
import { expressMajors } from "../helpers/frameworks.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import {
  ledgerCounts,
  NOW_S,
  type Reply,
  send,
  stripeBody,
  stripeHeaders,
  testReceiver,
  postDeclaredTooLarge,
  postChunkedPastCap,
} from "../helpers/http.js";

for (const [major, express] of expressMajors)
  describe(major, () => {
    let t: TestLedger;
    const servers: Server[] = [];
    const logged: Record<string, unknown>[] = [];
    const log = createLogger({ destination: { write: (line: string) => logged.push(JSON.parse(line)) } });
    /** hookledger's route first, express.json() for the app's other routes. */
    let good: Express;
    let goodUrl: string;
    /** express.json() mounted globally, before hookledger: the commonest misconfiguration. */
    let jsonFirst: Express;
    let jsonFirstUrl: string;
    /** express.raw() in front keeps the exact bytes. */
    let rawFirstUrl: string;
    /** Mounted with app.use: the source comes from the path under basePath. */
    let mountedUrl: string;

    async function listen(app: Express): Promise<string> {
      const server = await new Promise<Server>((resolve) => {
        const s = app.listen(0, "127.0.0.1", () => resolve(s));
      });
      servers.push(server);
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }

    before(async () => {
      t = await freshLedger();
      const handler = createExpressHandler(testReceiver(t.newPool("ingest"), t.ledger), { log });

      good = express();
      good.all("/webhooks/:source", handler);
      good.use(express.json());
      good.post("/orders", (req, res) => {
        res.json({ echoed: req.body });
      });
      goodUrl = await listen(good);

      jsonFirst = express();
      jsonFirst.use(express.json());
      jsonFirst.all("/webhooks/:source", handler);
      jsonFirstUrl = await listen(jsonFirst);

      const rawFirst = express();
      rawFirst.use(express.raw({ type: "*/*" }));
      rawFirst.all("/webhooks/:source", handler);
      rawFirstUrl = await listen(rawFirst);

      const mounted = express();
      mounted.use(
        "/hooks",
        createExpressHandler(testReceiver(t.newPool("ingest"), t.ledger), { basePath: "/hooks" }),
      );
      mountedUrl = await listen(mounted);
    });

    after(async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
      await t?.drop();
    });

    const counts = (id: string, source?: string) => ledgerCounts(t.pool, t.ledger, id, source);

    function postStripe(base: string, payload: string, headers = stripeHeaders(payload)): Promise<Reply> {
      return send(`${base}/webhooks/stripe`, { headers, body: payload });
    }

    function assertJson(reply: Reply, status: number, expected: Record<string, unknown>): void {
      assert.equal(reply.status, status, reply.text);
      assert.match(String(reply.headers["content-type"]), /^application\/json/);
      assert.deepEqual(JSON.parse(reply.text), expected);
    }

    test("express: POST a new event → 200 accepted, one pending row with the body byte-exact", async () => {
      const payload = stripeBody("evt_express_new");
      assertJson(await postStripe(goodUrl, payload), 200, { status: "accepted", id: "evt_express_new" });
      const { rows } = await t.pool.query<{ status: string; body: Buffer }>(
        `select status, body from ${t.ledger.s}.event_records where source = 'stripe' and dedupe_key = 'evt_express_new'`,
      );
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.status, "pending");
      assert.ok(rows[0]?.body.equals(Buffer.from(payload)), "the stored body is not the bytes sent");
    });

    test("express: POST the same event again → 200 duplicate, one row, duplicates.count 1", async () => {
      const payload = stripeBody("evt_express_dup");
      assertJson(await postStripe(goodUrl, payload), 200, { status: "accepted", id: "evt_express_dup" });
      assertJson(await postStripe(goodUrl, payload), 200, { status: "duplicate", id: "evt_express_dup" });
      assert.deepEqual(await counts("evt_express_dup", "stripe"), { events: 1, duplicates: 1 });
    });

    test("express: POST with a timestamp 301 s old → 401 uniform body; unknown source → 404; no row", async () => {
      const payload = stripeBody("evt_express_401");
      assertJson(await postStripe(goodUrl, payload, stripeHeaders(payload, undefined, NOW_S - 301)), 401, {
        error: "unauthorized",
        message: "signature verification failed",
      });
      const unknown = await send(`${goodUrl}/webhooks/stripe-eu`, {
        headers: stripeHeaders(payload),
        body: payload,
      });
      assert.equal(unknown.status, 404);
      assert.equal(JSON.parse(unknown.text).error, "unknown_source");
      assert.deepEqual(await counts("evt_express_401"), { events: 0, duplicates: 0 });
    });

    test("express: GET, PUT or HEAD on app.all's route → 405 with Allow: POST (hookledger's, not Express's 404)", async () => {
      for (const method of ["GET", "PUT", "HEAD"]) {
        const reply = await send(`${goodUrl}/webhooks/stripe`, {
          method,
          headers: { "content-type": "application/json" },
        });
        assert.equal(reply.status, 405, method);
        assert.equal(reply.headers.allow, "POST", method);
        if (method !== "HEAD") assert.equal(JSON.parse(reply.text).error, "method_not_allowed");
      }
    });

    test("express: POST declaring Content-Length 10 000 000 → 413 before reading, connection closed, no row", {
      timeout: 20_000,
    }, async () => {
      const answer = await postDeclaredTooLarge(`${goodUrl}/webhooks/stripe`, "evt_express_big");
      assert.equal(answer.status, 413, answer.text);
      assert.equal(JSON.parse(answer.text).error, "payload_too_large");
      assert.equal(answer.headers.connection, "close");
      assert.deepEqual(await counts("evt_express_big"), { events: 0, duplicates: 0 });
    });

    test("express: POST chunked 3 KB then 3 KB more, never ending → 413 at the crossing byte", {
      timeout: 20_000,
    }, async () => {
      const answer = await postChunkedPastCap(`${goodUrl}/webhooks/stripe`, "evt_express_chunked");
      assert.equal(answer.status, 413, answer.text);
      assert.equal(answer.headers.connection, "close");
    });

    test("express: POST with Content-Encoding gzip → 415, no row", async () => {
      const payload = stripeBody("evt_express_gzip");
      const reply = await postStripe(goodUrl, payload, {
        ...stripeHeaders(payload),
        "content-encoding": "gzip",
      });
      assert.equal(reply.status, 415, reply.text);
      assert.equal(JSON.parse(reply.text).error, "unsupported_encoding");
      assert.deepEqual(await counts("evt_express_gzip"), { events: 0, duplicates: 0 });
    });

    test("express: express.json() mounted first → 500 naming cause and fix, an error log line, no row", async () => {
      const payload = stripeBody("evt_express_json_first");
      logged.length = 0;
      const reply = await postStripe(jsonFirstUrl, payload);
      assert.equal(reply.status, 500, reply.text);
      const body = JSON.parse(reply.text) as { error: string; message: string; fix: string };
      assert.equal(body.error, "body_already_parsed");
      assert.match(body.message, /body parser consumed the request/);
      assert.match(body.fix, /before express\.json\(\)/);
      const line = logged.find((l) => l.result === "body_already_parsed");
      assert.ok(line, "no log line");
      assert.equal(line.level, 50);
      assert.equal(line.source, "stripe");
      assert.equal(line.parsedAs, "an object");
      assert.match(
        String(line.msg),
        /body parser read this webhook before hookledger.*Fix: mount hookledger's route before express\.json\(\)/,
      );
      assert.deepEqual(await counts("evt_express_json_first"), { events: 0, duplicates: 0 });
    });

    test("express: a delivery express.json() skips (other content type) is still read raw and accepted", async () => {
      const payload = stripeBody("evt_express_json_skipped");
      const headers = { ...stripeHeaders(payload), "content-type": "application/octet-stream" };
      assertJson(await postStripe(jsonFirstUrl, payload, headers), 200, {
        status: "accepted",
        id: "evt_express_json_skipped",
      });
    });

    test("express: express.raw() mounted first → its Buffer is the exact bytes: 200 accepted, then duplicate", async () => {
      const payload = stripeBody("evt_express_raw_first");
      assertJson(await postStripe(rawFirstUrl, payload), 200, {
        status: "accepted",
        id: "evt_express_raw_first",
      });
      assertJson(await postStripe(rawFirstUrl, payload), 200, {
        status: "duplicate",
        id: "evt_express_raw_first",
      });
      const { rows } = await t.pool.query<{ body: Buffer }>(
        `select body from ${t.ledger.s}.event_records where dedupe_key = 'evt_express_raw_first'`,
      );
      assert.ok(rows[0]?.body.equals(Buffer.from(payload)));
    });

    test("express: app.use('/hooks', handler) takes the source from the path under basePath", async () => {
      const payload = stripeBody("evt_express_mounted");
      const reply = await send(`${mountedUrl}/hooks/stripe`, {
        headers: stripeHeaders(payload),
        body: payload,
      });
      assertJson(reply, 200, { status: "accepted", id: "evt_express_mounted" });
      const outside = await send(`${mountedUrl}/hooks/stripe/extra`, {
        headers: stripeHeaders(payload),
        body: payload,
      });
      assert.equal(outside.status, 404);
    });

    test("express: the app's other routes keep express.json()", async () => {
      const reply = await send(`${goodUrl}/orders`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ sku: "A-1" }),
      });
      assertJson(reply, 200, { echoed: { sku: "A-1" } });
    });

    test("assertNoBodyParserBefore: throws naming express.json() when it runs first; passes when mounted after", () => {
      assert.doesNotThrow(() => assertNoBodyParserBefore(good, "/webhooks/stripe"));
      assert.throws(
        () => assertNoBodyParserBefore(jsonFirst, "/webhooks/stripe"),
        /jsonParser \(json body parser\) runs before hookledger's handler for POST \/webhooks\/stripe/,
      );
      const routeLevel = express();
      routeLevel.post(
        "/webhooks/:source",
        express.urlencoded({ extended: false }),
        createExpressHandler(testReceiver(t.pool, t.ledger)),
      );
      assert.throws(() => assertNoBodyParserBefore(routeLevel, "/webhooks/stripe"), /urlencodedParser/);
      const nested = express();
      const router = express.Router();
      router.use(express.text());
      router.all("/:source", createExpressHandler(testReceiver(t.pool, t.ledger)));
      nested.use("/webhooks", router);
      assert.throws(() => assertNoBodyParserBefore(nested, "/webhooks/stripe"), /textParser/);
      assert.throws(() => assertNoBodyParserBefore(express(), "/webhooks/stripe"), /no hookledger handler/);
    });
  });
