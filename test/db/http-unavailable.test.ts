// docs/architecture.md §4, "database unavailable / pool timeout": 503 with Retry-After within 2 s, through the node:http adapter.
// These receivers point at no Postgres at all, so there is no ledger in which a row could appear.
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, test } from "node:test";
import { createPool, type Pool } from "hookledger";
import { ledgerContext } from "hookledger";
import { type Reply, send, serve, stripeBody, stripeHeaders, testReceiver } from "../helpers/http.js";

const ledger = ledgerContext("hookledger_unreachable");
const closers: (() => Promise<void>)[] = [];

let refusedUrl: string;
let hungUrl: string;
const hungSockets = new Set<Socket>();
let hungAccepted = 0;

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  assert.ok(address && typeof address === "object");
  return address.port;
}

async function receiverOn(port: number): Promise<string> {
  const pool: Pool = createPool({
    connectionString: `postgres://postgres@127.0.0.1:${port}/test`,
    role: "ingest",
  });
  const server = await serve(testReceiver(pool, ledger));
  closers.push(
    () => server.close(),
    () => pool.end(),
  );
  return `${server.url}/webhooks/stripe`;
}

before(async () => {
  // A port that was just free: connections to it are refused.
  const probe = createServer();
  const freePort = await listening(probe);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  refusedUrl = await receiverOn(freePort);

  // A "hung" database: it accepts TCP connections and never says a word.
  const hung = createServer((socket) => {
    hungAccepted++;
    hungSockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => hungSockets.delete(socket));
  });
  const hungPort = await listening(hung);
  closers.push(async () => {
    for (const socket of hungSockets) socket.destroy();
    await new Promise<void>((resolve) => hung.close(() => resolve()));
  });
  hungUrl = await receiverOn(hungPort);
});

after(async () => {
  for (const close of closers) await close().catch(() => {});
});

function assertUnavailable(reply: Reply): void {
  assert.equal(reply.status, 503, reply.text);
  assert.match(String(reply.headers["retry-after"]), /^[1-9]\d*$/);
  assert.deepEqual(JSON.parse(reply.text), {
    error: "unavailable",
    message: "the ledger is unavailable; retry later",
  });
  // Neither a stack trace nor a library or system message reaches the sender.
  assert.doesNotMatch(reply.text, /\n\s+at |ECONN|timeout|pg-pool|postgres|127\.0\.0\.1/i);
}

const post = (url: string, id: string) => {
  const payload = stripeBody(id);
  return send(url, { headers: stripeHeaders(payload), body: payload });
};

test("POST while the database refuses connections → 503 with Retry-After within 2 s, no library message", async () => {
  for (const id of ["evt_refused_1", "evt_refused_2"]) {
    const reply = await post(refusedUrl, id);
    assertUnavailable(reply);
    assert.ok(reply.ms < 2000, `answered after ${Math.round(reply.ms)} ms`);
  }
});

test("POST while the database accepts TCP but never answers → 503 with Retry-After in under 2.5 s", async () => {
  const reply = await post(hungUrl, "evt_hung");
  assertUnavailable(reply);
  assert.ok(hungAccepted > 0, "the pool never reached the hung server");
  // A bound on the edge's deadline (pool connect timeout 1 s, claim deadline 1.8 s, docs/architecture.md §4: 2 s), with
  // room for a loaded machine; it is not a speed goal.
  assert.ok(reply.ms < 2500, `answered after ${Math.round(reply.ms)} ms`);
});
