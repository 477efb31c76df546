import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);

// A child that imports the built package and logs one record with secret-bearing fields to its stdout (a pipe).
// On stderr it says whether pino-pretty was loaded by the import alone and after the logger was created.
const CHILD = `
import Module from "node:module";
const loaded = () => Object.keys(Module._cache).some((file) => file.includes("pino-pretty"));
const { createLogger } = await import("hookledger");
const byImport = loaded();
const log = createLogger();
log.info({ source: "stripe", secret: "s3cr3t-value", signature: "sig-value", headers: { token: "t0k3n-value" } }, "event settled");
process.stderr.write(JSON.stringify({ byImport, byLogger: loaded() }));
`;

async function child(env: Record<string, string | undefined>) {
  const { LOG_FORMAT: _, ...rest } = process.env;
  const { stdout, stderr } = await run(process.execPath, ["--input-type=module", "-e", CHILD], {
    env: { ...rest, ...env },
  });
  return { stdout, loaded: JSON.parse(stderr) as { byImport: boolean; byLogger: boolean } };
}

const SECRETS = ["s3cr3t-value", "sig-value", "t0k3n-value"];

test("createLogger with LOG_FORMAT=pretty writes readable lines, redacted, loading pino-pretty only then", async () => {
  const { stdout, loaded } = await child({ LOG_FORMAT: "pretty" });
  assert.match(stdout, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: event settled\n/);
  assert.match(stdout, /source: "stripe"/);
  assert.throws(() => JSON.parse(stdout.split("\n")[0] ?? ""));
  for (const secret of SECRETS) assert.ok(!stdout.includes(secret), `${secret} in ${stdout}`);
  assert.match(stdout, /secret: "\[redacted\]"/);
  assert.deepEqual(loaded, { byImport: false, byLogger: true });
});

test("createLogger with LOG_FORMAT=json writes JSON lines, redacted, without loading pino-pretty", async () => {
  const { stdout, loaded } = await child({ LOG_FORMAT: "json" });
  const record = JSON.parse(stdout.trim()) as Record<string, unknown>;
  assert.equal(record.msg, "event settled");
  assert.equal(record.source, "stripe");
  assert.equal(record.secret, "[redacted]");
  assert.deepEqual(record.headers, { token: "[redacted]" });
  for (const secret of SECRETS) assert.ok(!stdout.includes(secret));
  assert.deepEqual(loaded, { byImport: false, byLogger: false });
});

test("createLogger without LOG_FORMAT writes JSON when stdout is not a terminal", async () => {
  const { stdout } = await child({});
  assert.equal((JSON.parse(stdout.trim()) as { msg: string }).msg, "event settled");
});

test("createLogger with an unknown LOG_FORMAT throws, naming the value and the choices", async () => {
  const { createLogger } = await import("hookledger");
  const before = process.env.LOG_FORMAT;
  process.env.LOG_FORMAT = "yaml";
  try {
    assert.throws(() => createLogger(), /LOG_FORMAT=yaml is not a log format; set it to "json" or "pretty"/);
  } finally {
    if (before === undefined) delete process.env.LOG_FORMAT;
    else process.env.LOG_FORMAT = before;
  }
});

test("createLogger({ format: 'pretty', destination }) formats into the destination", async () => {
  const { createLogger } = await import("hookledger");
  const lines: string[] = [];
  const log = createLogger({
    format: "pretty",
    destination: { write: (line: string) => void lines.push(line) },
  });
  log.warn({ eventId: "evt_1", token: "t0k3n-value" }, "handler failed");
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? "", /WARN: handler failed\n {4}eventId: "evt_1"\n {4}token: "\[redacted\]"\n$/);
});

test("createLogger() lines logged just before process.exit all reach a piped stdout, in order", async () => {
  // Logged in one tick, so nearly all are still buffered or under way when the process exits. Two loggers share
  // one writer, so their lines keep the order they were logged in.
  const script = `
const { createLogger } = await import("hookledger");
const a = createLogger({ format: "json" });
const b = createLogger({ format: "json" });
for (let i = 0; i < 20000; i++) (i % 2 ? a : b).info({ i }, "line");
process.exit(0);
`;
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const seen = stdout
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { i: number }).i);
  assert.equal(seen.length, 20000);
  assert.deepEqual(
    seen,
    Array.from({ length: 20000 }, (_, i) => i),
  );
});
