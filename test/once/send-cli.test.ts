// `hookledger send --source --file`: the built binary signs JSON files as configured sources and posts them to a
// `hookledger serve` on a real database.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createPool } from "hookledger";
import { type RunningCli, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl } from "../helpers/db.js";
import { freePort } from "../helpers/net.js";

const schema = `send_${randomBytes(4).toString("hex")}`;
const env = {
  ...process.env,
  DATABASE_URL: testDatabaseUrl(),
  HOOKLEDGER_SCHEMA: schema,
  PORT: "0",
  HL_SEND_STRIPE: "whsec_send_cli_stripe",
};
let dir: string;
let config: string;
let serve: RunningCli;
let url: string;
const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");
const file = (name: string) => join(dir, name);

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "hookledger-send-"));
  config = file("hookledger.config.mjs");
  await writeFile(
    config,
    `export default { sources: [
  { name: "stripe", provider: "stripe", secrets: [{ env: "HL_SEND_STRIPE" }, "whsec_old"] },
  { name: "github", provider: "github", secrets: ["send-cli-github"] },
  { name: "awardee", provider: "awardee", secrets: ["send-cli-awardee"],
    awardee: { signatureHeader: "x-sig", encoding: "base64", prefix: "sha256=", timestampHeader: "x-ts" } },
] };\n`,
  );
  const stripe = (id: string, created: number) =>
    JSON.stringify({ id, object: "event", type: "invoice.paid", created, data: { object: {} } });
  await writeFile(file("a.json"), stripe(`evt_${schema}_a`, 1767225600));
  await writeFile(file("b.json"), stripe(`evt_${schema}_b`, 1767225610));
  await writeFile(file("push.json"), JSON.stringify({ ref: "refs/heads/main" }));
  await writeFile(file("award.json"), JSON.stringify({ id: "aw_1", timestamp: "2026-01-01T00:00:00Z" }));
  await writeFile(file("broken.json"), "{ not json");
  serve = startCli(["serve", "--config", config], { env });
  url = (await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m))[1] ?? "";
});

after(async () => {
  assert.equal(await serve?.stop("SIGTERM"), 0, serve?.output());
  await rm(dir, { recursive: true, force: true });
  const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 1 });
  await pool.query(`drop schema if exists "${schema}" cascade`);
  await pool.end();
});

const send = (...args: string[]) => runCli(["send", "--config", config, "--url", url, ...args], { env });

test("hookledger send --file --reorder --dup: reverse order, each file accepted once then its copy a duplicate", async () => {
  const r = await send(
    "--source",
    "stripe",
    "--file",
    file("a.json"),
    "--file",
    file("b.json"),
    "--reorder",
    "--dup",
    "1",
  );
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.equal(lines.length, 4, r.stdout);
  assert.match(lines[0] ?? "", /b\.json +→ 200 \{"status":"accepted","id":"evt_send_\w+_b"\}/);
  assert.match(lines[1] ?? "", /b\.json \(copy 1\) +→ 200 \{"status":"duplicate"/);
  assert.match(lines[2] ?? "", /a\.json +→ 200 \{"status":"accepted"/);
  assert.match(lines[3] ?? "", /a\.json \(copy 1\) +→ 200 \{"status":"duplicate"/);
  const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 1 });
  try {
    const { rows } = await pool.query(`select dedupe_key from "${schema}".events where source = 'stripe'`);
    assert.equal(rows.length, 2);
  } finally {
    await pool.end();
  }
});

test("hookledger send signs for header-typed providers with --type, and with a source's awardee options", async () => {
  const push = await send("--source", "github", "--type", "push", "--file", file("push.json"), "--dup", "1");
  assert.equal(push.code, 0, push.stderr);
  assert.match(push.stdout, /accepted[\s\S]*duplicate/);
  const award = await send(
    "--source",
    "awardee",
    "--type",
    "award.granted",
    "--id",
    "del_1",
    "--file",
    file("award.json"),
  );
  assert.equal(award.code, 0, award.stderr);
  assert.match(award.stdout, /→ 200 \{"status":"accepted","id":"del_1"\}/);
});

test("hookledger send refuses usage mistakes with exit 2, naming the fix", async () => {
  const cases: [string[], RegExp][] = [
    [
      ["--source", "github", "--file", file("push.json")],
      /reads the event type from X-GitHub-Event: pass --type/,
    ],
    [
      ["--source", "stripe", "--id", "x", "--file", file("a.json")],
      /reads the event id from the body; drop --id/,
    ],
    [
      ["--source", "nope", "--file", file("a.json")],
      /no source 'nope' in .*; configured: stripe, github, awardee/,
    ],
    [["--file", file("a.json")], /--file needs --source NAME/],
    [["--source", "stripe"], /--source needs --file/],
    [["--source", "stripe", "--file", file("broken.json")], /broken\.json is not JSON/],
    [["--source", "stripe", "--file", file("missing.json")], /cannot read --file .*missing\.json/],
    [["--source", "stripe", "--file", file("a.json"), "--reorder"], /--reorder needs two or more --file/],
    [["--source", "stripe", "--file", file("a.json"), "--dup", "x"], /--dup 'x' is not a whole number/],
    [
      ["--frobnicate"],
      /^hookledger send: unknown option '--frobnicate'; send takes --source, --file, .*--help/,
    ],
  ];
  for (const [args, message] of cases) {
    const r = await send(...args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, message);
    noStack(r.stderr);
  }
});

test("hookledger send exits 1 on a non-2xx answer and prints it", async () => {
  await writeFile(file("no-id.json"), JSON.stringify({ type: "invoice.paid" }));
  const r = await send("--source", "stripe", "--file", file("no-id.json"));
  assert.equal(r.code, 1);
  assert.match(r.stdout, /→ 400 /);
});

test("hookledger send (the demo) against a service with other secrets exits 1 and says the demo signs with its own", async () => {
  // No --config and an empty working directory: the demo's sources and secrets.
  const r = await runCli(["send", "--url", url], {
    env,
    cwd: await mkdtemp(join(dir, "demo-")),
  });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout, /→ 401 /);
  assert.match(r.stdout, /demo deliveries were refused: the demo signs with the demo's own secrets/);
  assert.doesNotMatch(r.stdout, /ledger after the worker ran/);
});

test("hookledger send with nothing listening says so and how to start it, exit 1, no stack", async () => {
  const port = await freePort();
  const r = await runCli(["send", "--config", config, "--source", "stripe", "--file", file("a.json")], {
    env: { ...env, PORT: String(port) },
  });
  assert.equal(r.code, 1);
  assert.equal(
    r.stderr.trim(),
    `hookledger: nothing is listening on http://127.0.0.1:${port}; start it with \`npx hookledger serve\` (in the hookledger repository: \`npm start\`)`,
  );
  const demo = await runCli(["send", "--url", `http://127.0.0.1:${port}`], {
    env: { ...env, DATABASE_URL: "" },
  });
  assert.equal(demo.code, 1);
  assert.match(
    demo.stderr,
    /nothing is listening on http:\/\/127\.0\.0\.1:\d+; start it with `npx hookledger serve` \(in the hookledger repository: `npm start`\)/,
  );
  noStack(demo.stderr);
});

test("hookledger send --help shows both forms with examples", async () => {
  const r = await runCli(["send", "--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /--source NAME --file EVENT\.json/);
  assert.match(r.stdout, /Examples:\n {2}hookledger send\n/);
});
