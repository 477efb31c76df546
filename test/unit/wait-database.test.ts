// untilDatabase against a fake server that answers every connection the way a starting Postgres does (57P03):
// the wait logs its reason once however many attempts fail, logs the return once, and stops when aborted.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:net";
import { after, before, test } from "node:test";
import { createLogger, createPool } from "hookledger";
import { isTransientDatabaseError, untilDatabase } from "../../src/db/wait.js";

let server: Server;
let port = 0;
let connections = 0;

/** A Postgres ErrorResponse: FATAL, `code`, `message`. */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`, "utf8");
  const head = Buffer.alloc(5);
  head.write("E", 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

before(async () => {
  server = createServer((socket) => {
    connections++;
    // Whatever the startup message says, the answer is the one a server in startup or recovery gives.
    socket.once("data", () => socket.end(errorResponse("57P03", "the database system is starting up")));
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  port = typeof address === "object" && address ? address.port : 0;
});

after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function capture() {
  const lines: { level: number; msg: string }[] = [];
  const log = createLogger({
    format: "json",
    level: "info",
    destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
  });
  return { log, lines };
}

test("a server starting up (57P03) is waited for with one log line, and its return is logged once", async () => {
  const pool = createPool({
    connectionString: `postgres://u:p@127.0.0.1:${port}/app`,
    role: "admin",
    max: 1,
  });
  const { log, lines } = capture();
  const states: (string | undefined)[] = [];
  let calls = 0;
  try {
    await untilDatabase(
      async () => {
        calls++;
        // Four refusals by the fake server, then the "server" is up.
        if (calls <= 4) await pool.query("select 1");
      },
      { log, where: "127.0.0.1:5432/app", minDelayMs: 10, maxDelayMs: 40, onWait: (r) => states.push(r) },
    );
  } finally {
    await pool.end();
  }
  assert.equal(calls, 5);
  assert.ok(connections >= 4);
  const messages = lines.map((l) => l.msg);
  assert.deepEqual(messages, [
    "waiting for the database at 127.0.0.1:5432/app: the database system is starting up (57P03); retrying",
    "the database is back at 127.0.0.1:5432/app",
  ]);
  assert.deepEqual(states, ["the database system is starting up (57P03)", undefined]);
});

test("an aborted wait rejects with the signal's reason; a non-transient failure rejects at once", async () => {
  const pool = createPool({
    connectionString: `postgres://u:p@127.0.0.1:${port}/app`,
    role: "admin",
    max: 1,
  });
  const { log } = capture();
  const controller = new AbortController();
  const stop = new Error("SIGTERM");
  try {
    const waiting = untilDatabase(() => pool.query("select 1"), {
      log,
      where: "x",
      signal: controller.signal,
      minDelayMs: 60_000,
    });
    setTimeout(() => controller.abort(stop), 50);
    await assert.rejects(waiting, (error) => error === stop);
  } finally {
    await pool.end();
  }
  let calls = 0;
  const wrongPassword = Object.assign(new Error('password authentication failed for user "u"'), {
    code: "28P01",
  });
  await assert.rejects(
    untilDatabase(
      async () => {
        calls++;
        throw wrongPassword;
      },
      { log, where: "x", minDelayMs: 1 },
    ),
    (error) => error === wrongPassword,
  );
  assert.equal(calls, 1);
});

test("isTransientDatabaseError: refused, reset, starting up, too many connections, wrapped causes; not login or SQL errors", () => {
  const e = (code: string, message = code) => Object.assign(new Error(message), { code });
  for (const transient of [
    e("ECONNREFUSED"),
    e("ECONNRESET"),
    e("57P03"),
    e("57P01"),
    e("53300"),
    e("08006"),
    new AggregateError([e("ECONNREFUSED"), e("ECONNREFUSED")]),
    new Error("timeout exceeded when trying to connect"),
    new Error("migration 004_tombstones.sql failed", {
      cause: new Error("Connection terminated unexpectedly"),
    }),
  ]) {
    assert.equal(isTransientDatabaseError(transient), true, String(transient));
  }
  for (const fatal of [e("28P01"), e("28000"), e("3D000"), e("ENOTFOUND"), e("42P01"), new Error("boom")]) {
    assert.equal(isTransientDatabaseError(fatal), false, String(fatal));
  }
});
