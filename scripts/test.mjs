// Runs every test suite: unit and DB suites against the system PostgreSQL (15 on these machines), then the DB
// suites again against the embedded server (another major version), so both stay supported. Then, under each extra
// Node (22 and 24 from npm, or those HOOKLEDGER_TEST_NODES lists), the unit and DB suites again on the first pass's
// PostgreSQL; the slow test/once suites run on the primary Node only.
// Invoked by `npm test` after the build, type-check, lint and format check. Before the suites it finds, installs or
// starts what they need (scripts/test-needs.mjs, scripts/test-installs.mjs) and fails at once on what it cannot
// have; at the start and the end it says which servers and binaries the run used.
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { ensureDebianBinary, testChromium } from "./test-installs.mjs";
import { embeddedPostgres, testNodes, testPostgres, testRedis } from "./test-needs.mjs";

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

// "external", "embedded", "chaos" or "nodes" (the extra Node passes) runs that pass only, to iterate faster
// locally; "setup" runs none: only the finding, installing and starting, and the summary.
const only = process.env.HOOKLEDGER_TEST_ONLY;
const PASSES = ["external", "embedded", "chaos", "nodes", "setup"];
if (only !== undefined && !PASSES.includes(only)) {
  console.error(`HOOKLEDGER_TEST_ONLY=${only}: expected one of ${PASSES.join(", ")}`);
  process.exit(1);
}
// process.exit runs the "exit" handlers that stop a private redis-server and an embedded PostgreSQL.
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => process.exit(1));
const runs = (pass) => only === undefined || only === pass;
const needs = (...passes) => only === undefined || only === "setup" || passes.some((pass) => pass === only);

// Each resource's line in the summaries: what the run uses, "SKIPPED (why)", or why the run cannot start.
const used = new Map();
const notNeeded = `not needed for HOOKLEDGER_TEST_ONLY=${only}`;
const problems = [];
const stops = [];

console.log("=== setup: the servers and binaries the suites need");
const setupStarted = performance.now();
const env = {};

let chromium = notNeeded;
if (needs("external")) {
  const found = await testChromium();
  if (found.error) problems.push(found.error);
  chromium = found.error
    ? `MISSING (${found.error})`
    : found.skipped
      ? `SKIPPED (${found.skipped})`
      : `${found.path} ${found.version}`;
}
used.set("chromium", chromium);

let nodes = [];
if (needs("external", "nodes")) {
  const found = await testNodes();
  if (found.error) problems.push(found.error);
  else nodes = found.nodes;
  // test/once/young-generation.test.ts runs under each of them too.
  env.HOOKLEDGER_TEST_NODES = nodes.map((node) => node.path).join(delimiter);
  used.set(
    "extra nodes",
    found.error
      ? `MISSING (${found.error})`
      : nodes.length === 0
        ? "none (HOOKLEDGER_TEST_NODES is empty)"
        : `${nodes.map((node) => node.version).join(", ")} (${found.from})`,
  );
} else {
  used.set("extra nodes", notNeeded);
}

let promtool = notNeeded;
if (needs("external")) {
  // test/once/monitoring-files.test.ts skips its `promtool check/test rules` without it; the run goes on.
  const found = await ensureDebianBinary("promtool", "prometheus", { service: "prometheus" });
  promtool = found.path ? `${found.path} ${found.version ?? ""}`.trim() : `SKIPPED (${found.missing})`;
}
used.set("promtool", promtool);

let pgbouncer = notNeeded;
if (needs("external")) {
  // test/once/pgbouncer.test.ts runs hookledger through a real PgBouncer in transaction mode.
  // Debian puts it in /usr/sbin, which a non-root PATH may lack.
  const found = await ensureDebianBinary("pgbouncer", "pgbouncer", {
    service: "pgbouncer",
    env: { ...process.env, PATH: `${process.env.PATH ?? ""}:/usr/sbin` },
  });
  if (found.path) env.HOOKLEDGER_TEST_PGBOUNCER = found.path;
  else problems.push(`${found.missing} (test/once/pgbouncer.test.ts needs it)`);
  pgbouncer = found.path ? `${found.path} ${found.version ?? ""}`.trim() : `MISSING (${found.missing})`;
}
used.set("pgbouncer", pgbouncer);

// The first pass's server (the extra nodes' too) and the second pass's, started when that pass begins.
const postgres = {
  first: notNeeded,
  second: runs("embedded") ? "embedded, started for the second pass" : "",
};
const showPostgres = () =>
  used.set("postgres", [postgres.first, postgres.second].filter((s) => s !== "").join(", "));
if (needs("external", "nodes")) {
  const found = await testPostgres({ explicitUrl: process.env.HOOKLEDGER_TEST_DATABASE_URL });
  if (found.error) {
    problems.push(found.error);
    postgres.first = `MISSING (${found.error})`;
  } else {
    stops.push(found.stop);
    env.HOOKLEDGER_TEST_DATABASE_URL = found.url;
    postgres.first = `${found.label} (first pass${runs("nodes") ? " and extra nodes" : ""})`;
  }
}
showPostgres();

let redis = notNeeded;
if (needs("external", "embedded", "nodes")) {
  const found = await testRedis({ explicitUrl: process.env.HOOKLEDGER_TEST_REDIS_URL });
  stops.push(found.stop);
  if (found.url) env.HOOKLEDGER_TEST_REDIS_URL = found.url;
  redis = found.skipped
    ? `SKIPPED (${found.skipped}; test/db/cache-redis.test.ts skips its tests)`
    : found.label;
}
used.set("redis", redis);

const summary = (title) => {
  console.log(`\n=== ${title}`);
  for (const [name, line] of used) console.log(`${name}: ${line}`);
};
summary(`using (setup took ${((performance.now() - setupStarted) / 1000).toFixed(1)} s)`);

const outcomes = [];
const pass = async (label, promise) => {
  const ok = await promise;
  outcomes.push(`${label}: ${ok ? "passed" : "FAILED"}`);
};
try {
  if (problems.length > 0) {
    console.log(`\ncannot run the tests:\n${problems.map((problem) => `- ${problem}`).join("\n")}`);
    outcomes.push("setup: FAILED");
  } else {
    await suites();
  }
} finally {
  for (const stop of stops.reverse())
    await stop().catch((error) => console.error(`stopping: ${error.message}`));
}
const ok = outcomes.every((outcome) => !outcome.endsWith("FAILED"));
summary("summary");
for (const outcome of outcomes) console.log(outcome);
console.log(`overall: ${ok ? "PASSED" : "FAILED"}`);
process.exit(ok ? 0 : 1);

async function suites() {
  const unit = await files("test/unit");
  const db = await files("test/db");
  const once = await files("test/once");
  if (runs("external")) {
    const label = `unit + DB suites on PostgreSQL ${postgres.first.split(" (")[0]}`;
    await pass(label, runTests(label, [...unit, ...db, ...once], env));
  }
  if (runs("embedded")) {
    const embedded = await embeddedPostgres().catch((error) => error);
    postgres.second = `embedded ${embedded instanceof Error ? "FAILED to start" : embedded.version} (second pass)`;
    showPostgres();
    if (embedded instanceof Error) {
      return void outcomes.push(`DB suites on embedded PostgreSQL: FAILED (${embedded.message})`);
    }
    try {
      const label = `DB suites on embedded PostgreSQL ${embedded.version}`;
      await pass(label, runTests(label, db, { ...env, HOOKLEDGER_TEST_DATABASE_URL: embedded.url }));
    } finally {
      await embedded.stop();
    }
  }
  // The chaos suite's short tier (docs/chaos.md): its own cluster, receivers and workers as processes, faults, and
  // an oracle that fails the run on anything lost, duplicated, stuck or out of order.
  if (runs("chaos")) {
    console.log("\n=== chaos suite, short tier");
    const child = spawn(process.execPath, ["--import", "tsx", "chaos/main.ts"], { stdio: "inherit" });
    await pass(
      "chaos suite, short tier",
      new Promise((resolve) => child.on("exit", (code, signal) => resolve(code === 0 && signal === null))),
    );
  }
  for (const node of runs("nodes") ? nodes : []) {
    const label = `unit + DB suites under Node ${node.version}`;
    await pass(label, runTests(label, [...unit, ...db], env, node.path));
  }
}
