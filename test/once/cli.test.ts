import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createPool } from "hookledger";
import { testDatabaseUrl } from "../helpers/db.js";
import { cleanupAfter, runCli, startCli } from "../helpers/cli.js";
import { serverPort } from "../helpers/net.js";

const { dirs, schemas } = cleanupAfter();
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-cli-"));
  dirs.push(dir);
  return dir;
}

// No database configured: serve starts an embedded Postgres, on a port of its own.
async function embeddedEnv(): Promise<NodeJS.ProcessEnv> {
  const { DATABASE_URL: _url, HOOKLEDGER_SCHEMA: _schema, ...env } = process.env;
  return { ...env, PORT: "0", HOOKLEDGER_EMBEDDED_PORT: String(await serverPort()) };
}

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");

test("hookledger --help exits 0 and shows the commands with examples", async () => {
  const r = await runCli(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /serve/);
  assert.match(r.stdout, /Examples:/);
});

test("hookledger with an unknown LOG_FORMAT exits 2 naming it and the choices", async () => {
  const r = await runCli(["stats"], { env: { ...process.env, LOG_FORMAT: "yaml" } });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /LOG_FORMAT=yaml is not a log format; set it to "json" or "pretty"/);
  noStack(r.stderr);
});

test("hookledger with an unknown command exits 2 naming it", async () => {
  const r = await runCli(["serv"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command 'serv'/);
  noStack(r.stderr);
});

test("hookledger serve --config with a missing file exits 2 naming the file and the fix", async () => {
  const r = await runCli(["serve", "--config", "nope.mjs"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /config file nope\.mjs not found; pass an existing file/);
  noStack(r.stderr);
});

test("hookledger serve with a config file that does not load exits 1 naming the file", async () => {
  const dir = await tempDir();
  const file = join(dir, "hookledger.config.mjs");
  await writeFile(file, "export default { sources: [\n");
  const r = await runCli(["serve", "--config", file]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /could not load .*hookledger\.config\.mjs: .*fix the file/);
  noStack(r.stderr);
});

test("hookledger serve with an empty secret refuses to start, naming the field and the variable", async () => {
  const dir = await tempDir();
  const file = join(dir, "hookledger.config.mjs");
  await writeFile(
    file,
    `export default { sources: [{ name: "stripe", provider: "stripe", secrets: [{ env: "HL_TEST_UNSET_SECRET" }] }] };\n`,
  );
  const r = await runCli(["serve", "--config", file], { env: { ...process.env, HL_TEST_UNSET_SECRET: "" } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /sources\[0\]\.secrets\[0\].*set the environment variable HL_TEST_UNSET_SECRET/);
  noStack(r.stderr);
});

test("hookledger serve then send: accepted, duplicate, stale, and SIGTERM exits 0", async () => {
  const schema = `cli_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const env = { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema, PORT: "0" };
  const serve = startCli(["serve"], { env });
  try {
    const [, url] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m);
    const sent = await runCli(["send", "--url", url ?? ""], { env });
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(sent.stdout, /"status":"accepted"/);
    assert.match(sent.stdout, /"status":"duplicate"/);
    assert.match(sent.stdout, /settled \(stale\)/);
    assert.match(sent.stdout, /plan price_pro, status active/);
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
});

test("hookledger serve --no-worker receives and a separate hookledger worker process (with METRICS_PORT) applies", async () => {
  const schema = `cli_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const env = { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema, PORT: "0" };
  const serve = startCli(["serve", "--no-worker"], { env });
  const worker = startCli(["worker"], { env: { ...env, METRICS_PORT: "0" } });
  try {
    const [, url] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m);
    const [, metricsUrl] = await worker.waitForLine(/^hookledger worker metrics on (http:\/\/\S+)$/m);
    assert.equal((await fetch(metricsUrl ?? "")).status, 200, "the worker process serves /metrics");
    const sent = await runCli(["send", "--url", url ?? ""], { env });
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(sent.stdout, /settled \(stale\)/, "the worker process settled the events");
    const metrics = await (await fetch(metricsUrl ?? "")).text();
    assert.match(metrics, /hookledger_attempts_total\{[^}]*outcome="stale"[^}]*\} 1/);
    assert.match(sent.stdout, /plan price_pro, status active/);
  } finally {
    assert.equal(await worker.stop("SIGTERM"), 0, worker.output());
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
});

test("hookledger serve without DATABASE_URL runs an embedded Postgres that keeps its data across restarts", async () => {
  const dir = await tempDir();
  // As root the embedded server runs as the postgres user, which must be able to enter the working directory.
  await chmod(dir, 0o755);
  const env = await embeddedEnv();
  const first = startCli(["serve"], { env, cwd: dir });
  let url: string | undefined;
  try {
    url = (await first.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m, 120_000))[1];
    const sent = await runCli(["send", "--url", url ?? ""], { env, cwd: dir });
    assert.equal(sent.code, 0, sent.stderr);
    // The one-off commands find the embedded server through .hookledger/connection.json.
    const listed = await runCli(["events", "list", "--json"], { env, cwd: dir });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(JSON.parse(listed.stdout).length, 4);
    const stats = await runCli(["stats", "--json"], { env, cwd: dir });
    assert.equal(stats.code, 0, stats.stderr);
    const dryPrune = await runCli(["prune", "--older-than", "90d", "--dry-run", "--json"], { env, cwd: dir });
    assert.equal(dryPrune.code, 0, dryPrune.stderr);
  } finally {
    assert.equal(await first.stop("SIGINT"), 0, first.output());
  }
  const second = startCli(["serve"], { env, cwd: dir });
  try {
    await second.waitForLine(/^hookledger listening on/m, 120_000);
    const { connectionString } = JSON.parse(
      await readFile(join(dir, ".hookledger", "connection.json"), "utf8"),
    );
    const pool = createPool({ connectionString, role: "admin", max: 1 });
    try {
      const r = await pool.query("select count(*)::int as n from hookledger.events");
      assert.equal(r.rows[0].n, 4, "the first run's events survived the restart");
    } finally {
      await pool.end();
    }
  } finally {
    assert.equal(await second.stop("SIGTERM"), 0, second.output());
  }
  assert.equal(
    existsSync(join(dir, ".hookledger", "pg", "postmaster.pid")),
    false,
    "the embedded server stopped",
  );
});

test("hookledger serve names the embedded Postgres's own reason when it does not start", async () => {
  const dir = await tempDir();
  await chmod(dir, 0o755);
  // A data directory without its configuration: the server exits at once, before it listens.
  await mkdir(join(dir, ".hookledger", "pg"), { recursive: true });
  await writeFile(join(dir, ".hookledger", "pg", "PG_VERSION"), "9.6\n");
  const env = await embeddedEnv();
  const served = await runCli(["serve"], { env, cwd: dir });
  assert.notEqual(served.code, 0, served.stdout);
  assert.match(
    served.stderr,
    /the embedded Postgres did not start on port \d+: [^\n]*postgresql\.conf[^\n]*\. Set database\.embeddedPort/,
  );
  assert.doesNotMatch(served.stderr, /is the port taken/);
});

test("the README's example hookledger.config.mjs loads, validates and migrates", async () => {
  const readme = await readFile("README.md", "utf8");
  const example = readme.match(/```js\n(\/\/ hookledger\.config\.mjs\n[\s\S]*?)```/)?.[1];
  assert.ok(example, "the README has the example config");
  // Inside the package, so `import … from "hookledger"` resolves to this package (Node's self-reference).
  const dir = await mkdtemp(join(process.cwd(), ".readme-config-"));
  dirs.push(dir);
  const file = join(dir, "hookledger.config.mjs");
  await writeFile(file, example);
  const schema = `cli_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const env = {
    ...process.env,
    DATABASE_URL: testDatabaseUrl(),
    HOOKLEDGER_SCHEMA: schema,
    STRIPE_WEBHOOK_SECRET: "whsec_new",
    STRIPE_WEBHOOK_SECRET_OLD: "whsec_old",
    GITHUB_WEBHOOK_SECRET: "gh",
    BILLING_WEBHOOK_SECRET: `whsec_${Buffer.from("billing-key").toString("base64")}`,
  };
  const r = await runCli(["migrate", "--config", file], { env });
  assert.equal(r.code, 0, r.stderr);
  // serve verifies deliveries: it refuses an empty secret (migrate, which verifies none, does not need them).
  const missing = await runCli(["serve", "--config", file], { env: { ...env, GITHUB_WEBHOOK_SECRET: "" } });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /sources\[1\]\.secrets\[0\].*GITHUB_WEBHOOK_SECRET/);
});
