import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  getOutboxMessage,
  Handlers,
  listOutbox,
  Outbox,
  retryEvents,
  retryOutbox,
  SendError,
  type SendCall,
  silentLogger,
  startWorker,
} from "hookledger";
import { startAlertReceiver } from "../helpers/alert-receiver.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { type TestWorkerOptions, withTestWorker } from "../helpers/worker.js";

let t: TestLedger;
let applied: string;

before(async () => {
  t = await freshLedger();
  applied = `"${t.schema}".applied`;
  await t.pool.query(`create table ${applied} (event_id text not null)`);
});
after(() => t.drop());

/** One worker on its own pool for `body`, with quick retries unless `extra` says otherwise. */
function withWorker(handlers: Handlers, extra: TestWorkerOptions, body: () => Promise<void>): Promise<void> {
  const retry = { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 50 };
  const options = { concurrency: 2, pollIntervalMs: 100, retry, ...extra };
  return withTestWorker(t, t.newPool("work", 4), handlers, options, body);
}

async function message(source: string, eventId: string) {
  const all = await listOutbox(t.pool, t.ledger, { source }, 100);
  return all.filter((m) => m.eventId === eventId);
}

const fastRetry = { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 };

test("ctx.outbox.send with the built-in http sender POSTs once after the event commits, with its Idempotency-Key", async () => {
  const destination = await startAlertReceiver(() => 200, "/crm");
  try {
    const handlers = new Handlers().on("ob-http", "*", async (ctx) => {
      await ctx.tx.query(`insert into ${applied} values ($1)`, [ctx.event.id]);
      await ctx.outbox.send("http", { url: destination.url, body: { customer: ctx.event.id } });
    });
    await claimTestEvent(t.pool, t.ledger, { source: "ob-http", id: "evt_h1" });
    await withWorker(handlers, {}, async () => {
      await waitFor(
        "the message sent",
        async () => (await message("ob-http", "evt_h1"))[0]?.status === "sent",
      );
    });
    assert.equal(destination.received.length, 1);
    const [sent] = await message("ob-http", "evt_h1");
    assert.ok(sent);
    assert.equal(destination.received[0]?.headers["idempotency-key"], sent.idempotencyKey);
    assert.match(sent.idempotencyKey, /^hl_[A-Za-z0-9_-]{32}$/);
    assert.deepEqual(JSON.parse(destination.received[0]?.body ?? ""), { customer: "evt_h1" });
    assert.equal(sent.lastStatus, 200);
    assert.equal(sent.attempts, 1);
  } finally {
    await destination.close();
  }
});

test("ctx.outbox.send of an attempt that throws leaves no message; the attempt that commits sends one, under the same key", async () => {
  const keys: string[] = [];
  let runs = 0;
  const outbox = new Outbox().on("email", (_message, call: SendCall) => {
    keys.push(call.idempotencyKey);
  });
  const handlers = new Handlers().on("ob-roll", "*", async (ctx) => {
    runs++;
    const key = await ctx.outbox.send("email", { to: "a@example.com" });
    keys.push(`written ${key}`);
    if (ctx.event.attempt === 1) throw new Error("first attempt fails after its send");
  });
  await claimTestEvent(t.pool, t.ledger, { source: "ob-roll", id: "evt_r1" });
  await withWorker(handlers, { outbox }, async () => {
    await waitFor("the message sent", async () => (await message("ob-roll", "evt_r1"))[0]?.status === "sent");
  });
  assert.equal(runs, 2);
  const [sent] = await message("ob-roll", "evt_r1");
  assert.ok(sent);
  // Both attempts derived the same key; the sender ran once, for the attempt that committed.
  assert.deepEqual(keys, [
    `written ${sent.idempotencyKey}`,
    `written ${sent.idempotencyKey}`,
    sent.idempotencyKey,
  ]);
});

test("ctx.outbox.send of an event requeued after it settled does not send its messages again", async () => {
  let calls = 0;
  let runs = 0;
  const outbox = new Outbox().on("email", () => {
    calls++;
  });
  const handlers = new Handlers().on("ob-requeue", "*", async (ctx) => {
    runs++;
    await ctx.outbox.send("email", { n: 1 });
    await ctx.outbox.send("email", { n: 2 }, { key: "receipt" });
  });
  await claimTestEvent(t.pool, t.ledger, { source: "ob-requeue", id: "evt_q1" });
  await withWorker(handlers, { outbox }, async () => {
    const bothSent = async () =>
      (await message("ob-requeue", "evt_q1")).filter((m) => m.status === "sent").length === 2;
    await waitFor("both messages sent", bothSent);
    const [retried] = await retryEvents(t.pool, t.ledger, [{ source: "ob-requeue", dedupeKey: "evt_q1" }], {
      force: true,
    });
    assert.equal(retried?.result, "retried");
    await waitFor("the event ran again", async () => runs === 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
  });
  assert.equal(calls, 2);
  assert.deepEqual((await message("ob-requeue", "evt_q1")).map((m) => m.key).sort(), ["#0", "receipt"]);
});

test("an outbox sender's Retry-After is honoured: the next attempt waits for it, not for the backoff", async () => {
  const times: number[] = [];
  const outbox = new Outbox({ retry: fastRetry }).on("slow", () => {
    times.push(Date.now());
    if (times.length === 1) throw new SendError("busy", { retryAfterMs: 1500, status: 429 });
  });
  const handlers = new Handlers().on("ob-after", "*", (ctx) => ctx.outbox.send("slow", {}).then(() => {}));
  await claimTestEvent(t.pool, t.ledger, { source: "ob-after", id: "evt_a1" });
  await withWorker(handlers, { outbox }, async () => {
    await waitFor(
      "the message sent",
      async () => (await message("ob-after", "evt_a1"))[0]?.status === "sent",
    );
  });
  assert.equal(times.length, 2);
  const [first = 0, second = 0] = times;
  assert.ok(second - first >= 1400, `second attempt ${second - first} ms after the first`);
});

test("the http sender makes a 400 dead at once and a 503 retry; retryOutbox sends a dead message again", async () => {
  let fixed = false;
  const destination = await startAlertReceiver((n) =>
    fixed ? 200 : n === 0 ? { status: 503, body: "down" } : { status: 400, body: "bad customer" },
  );
  try {
    const outbox = new Outbox({ retry: fastRetry });
    const handlers = new Handlers().on("ob-dead", "*", (ctx) =>
      ctx.outbox.send("http", { url: destination.url, body: {} }).then(() => {}),
    );
    await claimTestEvent(t.pool, t.ledger, { source: "ob-dead", id: "evt_d1" });
    await withWorker(handlers, { outbox }, async () => {
      await waitFor(
        "the message dead",
        async () => (await message("ob-dead", "evt_d1"))[0]?.status === "dead",
      );
      const [dead] = await message("ob-dead", "evt_d1");
      assert.equal(dead?.attempts, 2);
      assert.equal(dead?.lastStatus, 400);
      assert.equal(dead?.lastError, "HTTP 400: bad customer");
      fixed = true;
      assert.deepEqual(await retryOutbox(t.pool, t.ledger, { filter: { source: "ob-dead" } }), [
        dead?.idempotencyKey,
      ]);
      await waitFor(
        "the message sent",
        async () => (await message("ob-dead", "evt_d1"))[0]?.status === "sent",
      );
    });
    assert.equal(destination.received.length, 3);
    const keys = new Set(destination.received.map((r) => r.headers["idempotency-key"]));
    assert.equal(keys.size, 1);
  } finally {
    await destination.close();
  }
});

test("an outbox message whose sender always fails is dead after maxAttempts, its last error kept", async () => {
  let calls = 0;
  const outbox = new Outbox({ retry: fastRetry }).on("flaky", () => {
    calls++;
    throw new Error(`refused ${calls}`);
  });
  const handlers = new Handlers().on("ob-max", "*", (ctx) => ctx.outbox.send("flaky", {}).then(() => {}));
  await claimTestEvent(t.pool, t.ledger, { source: "ob-max", id: "evt_m1" });
  await withWorker(handlers, { outbox }, async () => {
    await waitFor("the message dead", async () => (await message("ob-max", "evt_m1"))[0]?.status === "dead");
  });
  const [dead] = await message("ob-max", "evt_m1");
  assert.equal(calls, 3);
  assert.equal(dead?.attempts, 3);
  assert.equal(dead?.lastError, "refused 3");
});

test("ctx.outbox.send to a sender this worker lacks writes the message dead, naming the senders; the event applies", async () => {
  const outbox = new Outbox().on("email", () => {});
  const handlers = new Handlers().on("ob-unknown", "*", async (ctx) => {
    await ctx.tx.query(`insert into ${applied} values ($1)`, [ctx.event.id]);
    await ctx.outbox.send("emial", {});
  });
  await claimTestEvent(t.pool, t.ledger, { source: "ob-unknown", id: "evt_u1" });
  await withWorker(handlers, { outbox }, async () => {
    await waitFor("the message written", async () => (await message("ob-unknown", "evt_u1")).length === 1);
  });
  const [dead] = await message("ob-unknown", "evt_u1");
  assert.equal(dead?.status, "dead");
  assert.equal(dead?.lastError, 'no outbox sender named "emial"; the senders are http, email');
  const { rows } = await t.pool.query(`select 1 from ${applied} where event_id = 'evt_u1'`);
  assert.equal(rows.length, 1);
});

test("ctx.outbox.send to forward, forward mode's reserved name, fails the attempt naming it; no message is written", async () => {
  const handlers = new Handlers().on("ob-reserved", "*", async (ctx) => {
    await ctx.outbox.send("forward", {});
  });
  await claimTestEvent(t.pool, t.ledger, { source: "ob-reserved", id: "evt_f1" });
  await withWorker(handlers, { retry: { maxAttempts: 1, baseDelayMs: 10, maxDelayMs: 10 } }, async () => {
    await waitFor("the event dead", async () => {
      const { rows } = await t.pool.query<{ status: string }>(
        `select status from "${t.schema}".events where source = 'ob-reserved'`,
      );
      return rows[0]?.status === "dead";
    });
  });
  const { rows } = await t.pool.query<{ last_error: string }>(
    `select last_error from "${t.schema}".events where source = 'ob-reserved'`,
  );
  assert.match(rows[0]?.last_error ?? "", /the name forward is reserved for forward mode/);
  assert.deepEqual(await message("ob-reserved", "evt_f1"), []);
});

test("an outbox call that outlives its timeout fails its attempt; its late success is not recorded", async () => {
  const outbox = new Outbox({ timeoutMs: 200, retry: { maxAttempts: 1 } }).on("hangs", async () => {
    await new Promise((resolve) => setTimeout(resolve, 800)); // ignores its signal
  });
  const handlers = new Handlers().on("ob-late", "*", (ctx) => ctx.outbox.send("hangs", {}).then(() => {}));
  await claimTestEvent(t.pool, t.ledger, { source: "ob-late", id: "evt_l1" });
  await withWorker(handlers, { outbox }, async () => {
    await waitFor("the message dead", async () => (await message("ob-late", "evt_l1"))[0]?.status === "dead");
    await new Promise((resolve) => setTimeout(resolve, 1000));
  });
  const [dead] = await message("ob-late", "evt_l1");
  assert.equal(dead?.status, "dead");
  assert.equal(dead?.lastError, "no answer within 200 ms");
});

test("worker.stop past its grace gives an outbox call in flight back: pending, its attempt not counted", async () => {
  let started = false;
  const outbox = new Outbox().on("stuck", (_m, call) => {
    started = true;
    return new Promise((_, reject) =>
      call.signal.addEventListener("abort", () => reject(new Error("aborted"))),
    );
  });
  const handlers = new Handlers().on("ob-stop", "*", (ctx) => ctx.outbox.send("stuck", {}).then(() => {}));
  await claimTestEvent(t.pool, t.ledger, { source: "ob-stop", id: "evt_s1" });
  const pool = t.newPool("work", 4);
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers,
    log: silentLogger(),
    outbox,
    pollIntervalMs: 100,
  });
  await waitFor("the call started", async () => started);
  await worker.stop(100);
  const [back] = await message("ob-stop", "evt_s1");
  assert.equal(back?.status, "pending");
  assert.equal(back?.attempts, 0);
  assert.ok(back && back.nextAttemptAt.getTime() <= Date.now() + 1000);
});

test("the http sender refuses link-local and metadata addresses, in their IPv6 spellings too, dead at once", async () => {
  const urls = [
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:169.254.169.254]/",
    "http://[fe80::1]/",
    "http://[64:ff9b::a9fe:a9fe]/",
  ];
  const handlers = new Handlers().on("ob-ssrf", "*", async (ctx) => {
    for (const url of urls) await ctx.outbox.send("http", { url, body: {} });
  });
  await claimTestEvent(t.pool, t.ledger, { source: "ob-ssrf", id: "evt_x1" });
  await withWorker(handlers, { outbox: new Outbox({ retry: fastRetry }) }, async () => {
    await waitFor(
      "every message dead",
      async () => (await message("ob-ssrf", "evt_x1")).filter((m) => m.status === "dead").length === 4,
    );
  });
  for (const m of await message("ob-ssrf", "evt_x1")) {
    assert.equal(m.attempts, 1);
    assert.match(m.lastError ?? "", /^refused to connect to .*link-local/);
  }
  const detail = await getOutboxMessage(
    t.pool,
    t.ledger,
    (await message("ob-ssrf", "evt_x1"))[0]?.idempotencyKey ?? "",
  );
  assert.deepEqual(detail?.payload && typeof detail.payload, "object");
});
