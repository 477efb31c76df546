// simulateProvider against a real receiver on a real ledger: at least once, out of order, concurrent, retried.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import {
  createFetchHandler,
  createNodeHandler,
  createReceiver,
  silentLogger,
  stripeProvider,
} from "hookledger";
import { type SimulatedEvent, signDelivery, simulateProvider } from "hookledger/testing";
import { freshLedger, type TestLedger } from "../helpers/db.js";

const SECRET = "whsec_testkit_simulate";
let t: TestLedger;
let server: Server;
let url: string;
let clock = Date.now();

before(async () => {
  t = await freshLedger();
  const receiver = createReceiver({
    sources: [{ name: "stripe", provider: stripeProvider(), secrets: [SECRET], maxBodyBytes: 1_048_576 }],
    db: t.newPool("ingest"),
    ledger: t.ledger,
    log: silentLogger(),
    now: () => clock,
  });
  server = createServer(createNodeHandler(receiver));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/stripe`;
  fetchHandler = createFetchHandler(receiver);
});

let fetchHandler: (request: Request) => Promise<Response>;

after(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await t?.drop();
});

const stripeEvents = (prefix: string, n: number): SimulatedEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    body: {
      id: `${prefix}_${i}`,
      object: "event",
      type: "invoice.paid",
      created: 1767225600 + i,
      data: { object: {} },
    },
  }));

async function rowsOf(prefix: string): Promise<Map<string, number>> {
  const { rows } = await t.pool.query<{ dedupe_key: string; n: number }>(
    `select dedupe_key, count(*)::int as n from ${t.ledger.s}.events where dedupe_key like $1 group by dedupe_key`,
    [`${prefix}\\_%`],
  );
  return new Map(rows.map((r) => [r.dedupe_key, r.n]));
}

test("simulateProvider: 50 events over HTTP with duplicates and reordering are each claimed exactly once", async () => {
  const answers: { id: string; status: string }[] = [];
  const report = await simulateProvider({
    events: stripeEvents("evt_sim", 50),
    target: async (request) => {
      // Through the real listener, recording each answer (the URL form is also exercised below).
      const response = await fetch(url, {
        method: "POST",
        headers: request.headers,
        body: await request.arrayBuffer(),
      });
      const body = (await response.json()) as { id: string; status: string };
      answers.push(body);
      return new Response(JSON.stringify(body), { status: response.status });
    },
    sign: { provider: "stripe", secret: SECRET },
    duplicates: { rate: 0.4, copies: 2 },
    seed: 7,
    concurrency: 8,
  });
  assert.equal(report.delivered, 50);
  assert.deepEqual(report.undelivered, []);
  assert.ok(report.duplicatesSent >= 20, `duplicates sent: ${report.duplicatesSent}`);
  assert.equal(report.attempts, 50 + report.duplicatesSent);
  assert.deepEqual(report.statuses, { 200: report.attempts });
  assert.notDeepEqual(report.order.slice(0, 10), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "the order is shuffled");
  const rows = await rowsOf("evt_sim");
  assert.equal(rows.size, 50);
  assert.ok([...rows.values()].every((n) => n === 1));
  for (let i = 0; i < 50; i++) {
    const mine = answers.filter((a) => a.id === `evt_sim_${i}`);
    assert.equal(mine.filter((a) => a.status === "accepted").length, 1, `evt_sim_${i} accepted once`);
    assert.ok(mine.slice(1).every((a) => a.status === "duplicate"));
  }
});

test("simulateProvider to a URL: retries past 503s with a fresh signature each time, claimed once", async () => {
  const refusals = new Map<string, number>();
  const flaky = async (request: Request) => {
    const bytes = await request.arrayBuffer();
    const { id } = JSON.parse(new TextDecoder().decode(bytes)) as { id: string };
    const seen = refusals.get(id) ?? 0;
    if (seen < 3) {
      refusals.set(id, seen + 1);
      // Each refusal moves the receiver's clock 200 s on: a signature reused from an earlier attempt would be
      // outside Stripe's 300 s window by the third retry.
      clock += 200_000;
      return new Response("busy", { status: 503, headers: { "retry-after": "1" } });
    }
    return fetchHandler(new Request(url, { method: "POST", headers: request.headers, body: bytes }));
  };
  const events = stripeEvents("evt_retry", 10);
  const report = await simulateProvider({
    events,
    target: flaky,
    sign: (event) =>
      signDelivery({ provider: "stripe", secret: SECRET, body: event.body, timestamp: clock / 1000 }),
    duplicates: { rate: 0 },
    retry: { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 5 },
    concurrency: 1,
  });
  assert.deepEqual(report.statuses, { 200: 10, 503: 30 });
  assert.equal(report.delivered, 10);
  assert.equal(report.attempts, 40);
  assert.equal((await rowsOf("evt_retry")).size, 10);

  // And the URL form, with the real clock.
  clock = Date.now();
  const direct = await simulateProvider({
    events: stripeEvents("evt_url", 20),
    target: url,
    sign: { provider: "stripe", secret: SECRET },
    duplicates: { rate: 0.5, copies: 1 },
    seed: 3,
  });
  assert.equal(direct.delivered, 20);
  assert.deepEqual(direct.statuses, { 200: 20 + direct.duplicatesSent });
  const rows = await rowsOf("evt_url");
  assert.equal(rows.size, 20);
});

test("simulateProvider with createFetchHandler itself as the target posts to /webhooks/{source}: every event claimed", async () => {
  const events = stripeEvents("evt_handler", 8);
  const report = await simulateProvider({
    events,
    target: fetchHandler,
    source: "stripe",
    sign: (event) =>
      signDelivery({ provider: "stripe", secret: SECRET, body: event.body, timestamp: clock / 1000 }),
  });
  assert.equal(report.delivered, 8);
  assert.deepEqual(report.undelivered, []);
  assert.equal(report.statuses[404], undefined);
  const claimed = await rowsOf("evt_handler");
  assert.equal(claimed.size, 8);
});
