import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createPool, type EmbeddedDatabase, silentLogger, startEmbeddedPostgres } from "hookledger";
import { cleanupAfter, type RunningCli, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl, waitFor } from "../helpers/db.js";
import { freePort } from "../helpers/net.js";

// A Postgres of this file's own, stopped and started under the CLI; the main test server is never touched.
const { dirs, schemas } = cleanupAfter();
const stops: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => {});
});

interface Cluster {
  readonly url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** An initialised cluster on a free port, left stopped. */
async function stoppedCluster(): Promise<Cluster> {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-outage-"));
  // As root the server runs as the postgres user, which must be able to enter this directory.
  await chmod(dir, 0o755);
  dirs.push(dir);
  const options = { dataDir: join(dir, "pg"), port: await freePort(), log: silentLogger() };
  let db: EmbeddedDatabase | undefined = await startEmbeddedPostgres(options);
  const url = db.connectionString;
  await db.stop();
  db = undefined;
  const cluster: Cluster = {
    url,
    async start() {
      db = await startEmbeddedPostgres(options);
    },
    async stop() {
      await db?.stop();
      db = undefined;
    },
  };
  stops.push(() => cluster.stop());
  return cluster;
}

async function workDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-outage-cwd-"));
  dirs.push(dir);
  return dir;
}

/** `/readyz`'s status and reason on the admin listener, or `undefined` while nothing listens. */
async function readyz(port: number): Promise<{ status: number; reason?: string } | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/readyz`);
    const body = (await response.json()) as { reason?: string };
    return { status: response.status, ...(body.reason !== undefined && { reason: body.reason }) };
  } catch {
    return undefined;
  }
}

/** The JSON log records of `cli` whose message matches `pattern`. */
function records(cli: RunningCli, pattern: RegExp): Record<string, unknown>[] {
  return cli
    .stdout()
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((r) => pattern.test(String(r.msg)));
}

const env = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
  ...process.env,
  LOG_FORMAT: "json",
  LOG_LEVEL: "info",
  ...extra,
});

test("serve started while the database is down waits, says so once in the log and on /readyz, then accepts a delivery", async () => {
  const cluster = await stoppedCluster();
  const port = await freePort();
  const adminPort = await freePort();
  const schema = `outage_${randomBytes(4).toString("hex")}`;
  const e = env({ DATABASE_URL: cluster.url, HOOKLEDGER_SCHEMA: schema, ADMIN_PORT: String(adminPort) });
  const serve = startCli(["serve", "--port", String(port)], { env: e, cwd: await workDir() });
  stops.push(() => serve.stop("SIGKILL"));
  try {
    await waitFor(
      "/readyz to answer 503 database_unreachable",
      async () => (await readyz(adminPort))?.reason === "database_unreachable",
      30_000,
    );
    assert.equal((await readyz(adminPort))?.status, 503);
    // A provider's delivery meanwhile is answered 503 with Retry-After, and counted.
    const early = await fetch(`http://127.0.0.1:${port}/webhooks/stripe`, { method: "POST", body: "{}" });
    assert.equal(early.status, 503);
    assert.equal(early.headers.get("retry-after"), "5");
    await early.arrayBuffer();
    // Several retries go by (0.5 s, 1 s, 2 s, …): the process stays and logs the wait only once.
    await sleep(4000);
    assert.equal(serve.child.exitCode, null, `serve exited while waiting:\n${serve.output()}`);
    const refused = records(serve, /^waiting for the database/);
    assert.equal(refused.length, 1, serve.stdout());
    const [address] = /localhost:\d+\/postgres/.exec(cluster.url) ?? [];
    assert.match(
      String(refused[0]?.msg),
      new RegExp(`^waiting for the database at ${address}: connection refused.*; retrying$`),
    );
    assert.doesNotMatch(serve.output(), /hookledger:\s/, "no error line");

    await cluster.start();
    const [, url] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m, 60_000);
    const sent = await runCli(["send", "--url", url ?? ""], { env: e });
    assert.equal(sent.code, 0, sent.stderr);
    assert.match(sent.stdout, /"status":"accepted"/);
    assert.equal((await readyz(adminPort))?.status, 200);

    const waiting = records(serve, /^waiting for the database/);
    // The server may answer "starting up" (57P03) for a moment before it accepts: that is a state change, logged
    // once too; no state is logged twice in a row.
    assert.ok(waiting.length <= 2, serve.stdout());
    for (let i = 1; i < waiting.length; i++) assert.notEqual(waiting[i]?.msg, waiting[i - 1]?.msg);
    assert.equal(records(serve, /^the database is back/).length, 1, serve.stdout());
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
  const stats = await runCli(["stats", "--json", "--source", "stripe"], { env: e });
  assert.equal(stats.code, 0, stats.stderr);
  const [stripe] = (JSON.parse(stats.stdout) as { sources: { unavailable: number }[] }).sources;
  assert.equal(stripe?.unavailable, 1, stats.stdout);
});

test("SIGTERM while serve and worker wait for the database exits 0", async () => {
  const cluster = await stoppedCluster();
  const port = await freePort();
  const dir = await workDir();
  const readyFile = join(dir, "worker.ready");
  const e = env({ DATABASE_URL: cluster.url, HOOKLEDGER_SCHEMA: "outage_never" });
  const serve = startCli(["serve", "--port", String(port)], { env: e, cwd: dir });
  const worker = startCli(["worker", "--ready-file", readyFile], { env: e, cwd: dir });
  stops.push(
    () => serve.stop("SIGKILL"),
    () => worker.stop("SIGKILL"),
  );
  await waitFor(
    "both to log that they wait",
    async () =>
      records(serve, /^waiting for the database/).length > 0 &&
      records(worker, /^waiting for the database/).length > 0,
    30_000,
  );
  assert.equal(existsSync(readyFile), false, "no ready file while waiting");
  assert.equal(await worker.stop("SIGTERM"), 0, worker.output());
  assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
});

test("serve --no-migrate on an unmigrated schema names the command, reports migrations_pending, and starts once migrated", async () => {
  const schema = `outage_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const port = await freePort();
  const adminPort = await freePort();
  const e = env({
    DATABASE_URL: testDatabaseUrl(),
    HOOKLEDGER_SCHEMA: schema,
    ADMIN_PORT: String(adminPort),
  });
  const serve = startCli(["serve", "--no-migrate", "--port", String(port)], { env: e, cwd: await workDir() });
  stops.push(() => serve.stop("SIGKILL"));
  try {
    await waitFor(
      "/readyz to answer 503 migrations_pending",
      async () => (await readyz(adminPort))?.reason === "migrations_pending",
      30_000,
    );
    await waitFor(
      "the log to name the command",
      async () => records(serve, /hookledger migrate/).length > 0,
      10_000,
    );
    assert.match(
      String(records(serve, /hookledger migrate/)[0]?.msg),
      new RegExp(`^schema '${schema}' is not migrated: run \`hookledger migrate\``),
    );
    const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 1 });
    try {
      const { rows } = await pool.query("select 1 from pg_namespace where nspname = $1", [schema]);
      assert.equal(rows.length, 0, "--no-migrate changed no schema");
    } finally {
      await pool.end();
    }
    assert.equal(serve.child.exitCode, null, serve.output());

    const migrated = await runCli(["migrate"], { env: e });
    assert.equal(migrated.code, 0, migrated.stderr);
    await serve.waitForLine(/^hookledger listening on /m, 60_000);
    assert.equal((await readyz(adminPort))?.status, 200);
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
});

test("worker --ready-file: written with a stderr line once the worker runs, removed when it stops", async () => {
  const schema = `outage_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const dir = await workDir();
  const readyFile = join(dir, "worker.ready");
  const e = env({ DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema });
  const worker = startCli(["worker", "--ready-file", readyFile], { env: e, cwd: dir });
  stops.push(() => worker.stop("SIGKILL"));
  await worker.waitForLine(/^hookledger worker ready$/m, 60_000);
  assert.equal(existsSync(readyFile), true);
  assert.equal(await worker.stop("SIGTERM"), 0, worker.output());
  assert.equal(existsSync(readyFile), false, "removed at exit");
});
