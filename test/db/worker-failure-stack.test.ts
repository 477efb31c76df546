import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createLogger, createPool, Handlers, startWorker } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";

let t: TestLedger;

before(async () => {
  t = await freshLedger();
});

after(() => t.drop());

// A named function, so its frame names it and this file.
async function chargeCustomer(): Promise<never> {
  throw new Error("card declined", { cause: new Error("upstream 402") });
}

test("a handler that throws: last_error and the log keep the message, its cause and the handler's frames", async () => {
  await claimTestEvent(t.pool, t.ledger, {
    source: "shop",
    id: "evt_stack",
    payload: { id: "evt_stack", card: "4242-secret-payload" },
  });
  const lines: string[] = [];
  const log = createLogger({
    format: "json",
    destination: { write: (line: string) => void lines.push(line) },
  });
  const pool = createPool({ connectionString: t.url, role: "work", max: 2 });
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("shop", "*", () => chargeCustomer()),
    log,
    pollIntervalMs: 50,
    retry: { maxAttempts: 1 },
  });
  try {
    await waitFor("the event to die", async () => (await lastError())?.status === "dead");
  } finally {
    await worker.stop(5000);
    await pool.end();
  }

  const row = await lastError();
  const text = row?.last_error ?? "";
  const [first, ...rest] = text.split("\n");
  assert.equal(first, "card declined: upstream 402");
  assert.match(rest[0] ?? "", /^ {4}at chargeCustomer \(.*worker-failure-stack\.test\.ts:\d+:\d+\)$/);
  assert.ok(rest.includes("caused by Error: upstream 402"), text);
  assert.ok(rest.filter((l) => l.trimStart().startsWith("at ")).length <= 10, "at most 5 frames per error");
  assert.ok(text.length <= 2000);

  const record = lines.map((l) => JSON.parse(l)).find((r) => r.msg === "handler failed");
  assert.ok(record, `a "handler failed" record among ${lines.length} lines`);
  assert.equal(record.err, "card declined");
  assert.equal(record.stack, text);
  assert.equal(record.eventId, "evt_stack");
  assert.ok(!lines.some((l) => l.includes("4242-secret-payload")), "no payload in the log");
});

test("a long stack is bounded to 5 frames per error", async () => {
  await claimTestEvent(t.pool, t.ledger, { source: "deep", id: "evt_deep" });
  const recurse = (n: number): never => {
    if (n === 0) throw new Error("deep failure");
    return recurse(n - 1);
  };
  const pool = createPool({ connectionString: t.url, role: "work", max: 2 });
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("deep", "*", () => recurse(50)),
    log: createLogger({ format: "json", destination: { write: () => {} } }),
    pollIntervalMs: 50,
    retry: { maxAttempts: 1 },
  });
  try {
    await waitFor("the event to die", async () => (await lastError("deep", "evt_deep"))?.status === "dead");
  } finally {
    await worker.stop(5000);
    await pool.end();
  }
  const lines = ((await lastError("deep", "evt_deep"))?.last_error ?? "").split("\n");
  assert.equal(lines[0], "deep failure");
  assert.equal(lines.length, 6);
  assert.ok(
    lines.slice(1).every((l) => /^ {4}at recurse /.test(l)),
    lines.join("\n"),
  );
});

async function lastError(source = "shop", id = "evt_stack") {
  const { rows } = await t.pool.query<{ status: string; last_error: string | null }>(
    `select status, last_error from ${t.ledger.s}.events where source = $1 and dedupe_key = $2`,
    [source, id],
  );
  return rows[0];
}
