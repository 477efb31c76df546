// Runs every test suite: unit and DB suites against the system PostgreSQL (15 on these machines), then the DB
// suites again against the embedded server (another major version), so both stay supported. Then, under each extra
// Node binary listed in HOOKLEDGER_TEST_NODES (paths separated by ":", set by .ci/run for Node 22 and 24), the
// unit and DB suites again on the system PostgreSQL; the slow test/once suites run on the primary Node only.
// Invoked by `npm test` after the build, type-check, lint and format check.
import { spawn } from "node:child_process";
import { chmod, mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import pg from "pg";
import { silentLogger, startEmbeddedPostgres } from "../dist/index.js";

const external = process.env.HOOKLEDGER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

const files = async (dir) =>
  (await readdir(dir))
    .filter((f) => f.endsWith(".test.ts"))
    .sort()
    .map((f) => join(dir, f));

function runTests(label, testFiles, env, node = process.execPath) {
  console.log(`\n=== ${label}: ${testFiles.length} files`);
  return new Promise((resolve) => {
    const child = spawn(
      node,
      ["--import", "tsx", "--test", "--test-concurrency=4", "--test-timeout=240000", ...testFiles],
      { stdio: "inherit", env: { ...process.env, ...env } },
    );
    child.on("exit", (code, signal) => resolve(code === 0 && signal === null));
  });
}

async function reachable(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    const { rows } = await client.query("show server_version");
    return rows[0].server_version;
  } catch (error) {
    console.error(`cannot reach ${url.replace(/:[^:@/]+@/, ":***@")}: ${error.message}`);
    console.error("start PostgreSQL on 127.0.0.1:5432 or set HOOKLEDGER_TEST_DATABASE_URL");
    return undefined;
  } finally {
    await client.end().catch(() => {});
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

const unit = await files("test/unit");
const db = await files("test/db");
const once = await files("test/once");
// "external", "embedded", "chaos" or "nodes" (the HOOKLEDGER_TEST_NODES passes), to iterate faster locally.
const only = process.env.HOOKLEDGER_TEST_ONLY;

let ok = true;
if (only === undefined || only === "external") {
  const version = await reachable(external);
  if (!version) process.exit(1);
  ok =
    (await runTests(`unit + DB suites on PostgreSQL ${version}`, [...unit, ...db, ...once], {
      HOOKLEDGER_TEST_DATABASE_URL: external,
    })) && ok;
}
if (only === undefined || only === "embedded") {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-test-"));
  // As root the server runs as the unprivileged postgres user, which must be able to enter this directory.
  await chmod(dir, 0o755);
  const embedded = await startEmbeddedPostgres({
    dataDir: join(dir, "pg"),
    port: await freePort(),
    log: silentLogger(),
  });
  try {
    const version = await reachable(embedded.connectionString);
    ok =
      (await runTests(`DB suites on embedded PostgreSQL ${version}`, db, {
        HOOKLEDGER_TEST_DATABASE_URL: embedded.connectionString,
      })) && ok;
  } finally {
    await embedded.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
// The chaos suite's short tier (docs/chaos.md): its own cluster, receivers and workers as processes, faults, and
// an oracle that fails the run on anything lost, duplicated, stuck or out of order.
if (only === undefined || only === "chaos") {
  console.log("\n=== chaos suite, short tier");
  ok =
    (await new Promise((resolve) => {
      const child = spawn(process.execPath, ["--import", "tsx", "chaos/main.ts"], { stdio: "inherit" });
      child.on("exit", (code, signal) => resolve(code === 0 && signal === null));
    })) && ok;
}
const extraNodes = (process.env.HOOKLEDGER_TEST_NODES ?? "").split(delimiter).filter((path) => path !== "");
for (const node of only === undefined || only === "nodes" ? extraNodes : []) {
  const version = await nodeVersion(node);
  if (!version) {
    console.error(`cannot run ${node} (from HOOKLEDGER_TEST_NODES)`);
    ok = false;
    continue;
  }
  ok =
    (await runTests(
      `unit + DB suites under Node ${version} on the system PostgreSQL`,
      [...unit, ...db],
      { HOOKLEDGER_TEST_DATABASE_URL: external },
      node,
    )) && ok;
}
process.exit(ok ? 0 : 1);

function nodeVersion(node) {
  return new Promise((resolve) => {
    const child = spawn(node, ["--version"], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => resolve(undefined));
    child.on("exit", (code) => resolve(code === 0 ? out.trim() : undefined));
  });
}
