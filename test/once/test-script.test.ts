// scripts/test.mjs's setup (scripts/test-needs.mjs, scripts/test-installs.mjs): what `npm test` installs or starts
// on a machine that lacks it. Installs are faked only at the command boundary (an `apt-get` and a `sudo` on PATH);
// the servers are real, started beside a closed port standing for a machine with none.
import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { Redis } from "ioredis";
import pg from "pg";
import { onPath, testChromium } from "../../scripts/test-installs.mjs";
import {
  postgresVersion,
  redisVersion,
  testNodes,
  testPostgres,
  testRedis,
} from "../../scripts/test-needs.mjs";
import { freePort } from "../helpers/net.js";

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A PATH of two empty directories (`bin` for the fake commands, `installed` for what they install). */
async function fakeMachine() {
  const root = await mkdtemp(join(tmpdir(), "hookledger-test-script-"));
  dirs.push(root);
  const bin = join(root, "bin");
  const installed = join(root, "installed");
  await mkdir(bin);
  await mkdir(installed);
  const script = async (name: string, body: string) => {
    await writeFile(join(bin, name), `#!/bin/sh\n${body}\n`);
    await chmod(join(bin, name), 0o755);
  };
  const calls = async (name: string) =>
    readFile(join(root, `${name}.calls`), "utf8").then(
      (text) => text.trim().split("\n"),
      () => [],
    );
  const lines: string[] = [];
  return {
    root,
    bin,
    installed,
    script,
    calls,
    lines,
    log: (line: string) => lines.push(line),
    env: { PATH: `${bin}:${installed}` },
    absent: join(root, "no-such-chromium"),
  };
}

// Like Debian's: `apt-get install … chromium` leaves a `chromium` that prints its version.
const fakeAptGet = (m: Awaited<ReturnType<typeof fakeMachine>>) =>
  m.script(
    "apt-get",
    [
      `echo "$*" >> ${m.root}/apt-get.calls`,
      `case " $* " in *" install "*" chromium "*)`,
      `  printf '#!/bin/sh\\necho "Chromium 130.0.6723.91 built on Debian"\\n' > ${m.installed}/chromium`,
      `  /bin/chmod 755 ${m.installed}/chromium ;;`,
      "esac",
    ].join("\n"),
  );

test("testChromium as root with no Chromium anywhere installs Debian's chromium, says so once, then finds it", async () => {
  const m = await fakeMachine();
  await fakeAptGet(m);
  const found = await testChromium({ env: m.env, uid: 0, log: m.log, systemPath: m.absent });
  assert.deepEqual(found, {
    path: join(m.installed, "chromium"),
    version: "Chromium 130.0.6723.91 built on Debian",
  });
  assert.deepEqual(await m.calls("apt-get"), ["install -y -q --no-install-recommends chromium"]);
  assert.deepEqual(m.lines, [
    "chromium is missing: installing Debian's chromium (apt-get install chromium)…",
    `installed chromium: ${join(m.installed, "chromium")} Chromium 130.0.6723.91 built on Debian`,
  ]);
});

test("testChromium retries after apt-get update when the first install fails (a stale package list)", async () => {
  const m = await fakeMachine();
  await m.script(
    "apt-get",
    [
      `echo "$*" >> ${m.root}/apt-get.calls`,
      `case "$1" in update) : > ${m.root}/updated ;; install) [ -e ${m.root}/updated ] || exit 100`,
      `  printf '#!/bin/sh\\necho "Chromium 130"\\n' > ${m.installed}/chromium; /bin/chmod 755 ${m.installed}/chromium ;;`,
      "esac",
    ].join("\n"),
  );
  const found = await testChromium({ env: m.env, uid: 0, log: m.log, systemPath: m.absent });
  assert.equal(found.path, join(m.installed, "chromium"));
  assert.deepEqual(await m.calls("apt-get"), [
    "install -y -q --no-install-recommends chromium",
    "update -q",
    "install -y -q --no-install-recommends chromium",
  ]);
  assert.equal(m.lines.filter((line) => line.startsWith("chromium is missing")).length, 1);
});

test("testChromium as a user without password-less sudo fails naming the fix and runs no apt-get", async () => {
  const m = await fakeMachine();
  await fakeAptGet(m);
  await m.script(
    "sudo",
    `echo "$*" >> ${m.root}/sudo.calls\necho "sudo: a password is required" >&2\nexit 1`,
  );
  const found = await testChromium({ env: m.env, uid: 1000, log: m.log, systemPath: m.absent });
  assert.match(found.error ?? "", /chromium is missing .*neither root nor has password-less sudo/);
  assert.match(found.error ?? "", /`sudo apt-get install chromium`/);
  assert.match(found.error ?? "", /HOOKLEDGER_CHROMIUM/);
  assert.match(found.error ?? "", /HOOKLEDGER_SKIP_BROWSER=1/);
  assert.deepEqual(await m.calls("sudo"), ["-n true"]);
  assert.deepEqual(await m.calls("apt-get"), []);
  assert.deepEqual(m.lines, []);
});

test("testChromium under HOOKLEDGER_SKIP_BROWSER=1 skips on purpose and installs nothing", async () => {
  const m = await fakeMachine();
  await fakeAptGet(m);
  const env = { ...m.env, HOOKLEDGER_SKIP_BROWSER: "1" };
  const found = await testChromium({ env, uid: 0, log: m.log, systemPath: m.absent });
  assert.deepEqual(found, { skipped: "HOOKLEDGER_SKIP_BROWSER=1" });
  assert.deepEqual(await m.calls("apt-get"), []);
});

test("testPostgres with nothing at the default URL starts an embedded server, says so once, and stops it", async () => {
  const closed = await freePort();
  const lines: string[] = [];
  const found = await testPostgres({
    defaultUrl: `postgres://postgres@127.0.0.1:${closed}/test`,
    log: (line) => lines.push(line),
  });
  assert.ok(found.url, found.error);
  assert.match(found.label, /^embedded \d+\.\d+$/);
  assert.equal(lines.length, 1);
  assert.match(
    lines[0] ?? "",
    new RegExp(`^no PostgreSQL answers at 127\\.0\\.0\\.1:${closed} \\(.*\\): starting`),
  );
  const client = new pg.Client({ connectionString: found.url });
  await client.connect();
  try {
    assert.deepEqual((await client.query("select 1 as one")).rows, [{ one: 1 }]);
  } finally {
    await client.end();
  }
  await found.stop();
  assert.ok((await postgresVersion(found.url)).error, "the embedded server still answers after stop()");
});

test("testPostgres with an unreachable HOOKLEDGER_TEST_DATABASE_URL fails naming it and starts nothing", async () => {
  const lines: string[] = [];
  const explicitUrl = `postgres://postgres:secret@127.0.0.1:${await freePort()}/test`;
  const found = await testPostgres({ explicitUrl, log: (line) => lines.push(line) });
  assert.match(
    found.error ?? "",
    /^cannot reach HOOKLEDGER_TEST_DATABASE_URL=postgres:\/\/postgres:\*\*\*@127/,
  );
  assert.deepEqual(lines, []);
});

test("testRedis with nothing at the default URL starts a private redis-server that answers PING, and stops it", {
  skip: !onPath("redis-server") && "no redis-server here (scripts/test.mjs installs it when it needs one)",
}, async () => {
  const closed = await freePort();
  const lines: string[] = [];
  const found = await testRedis({
    defaultUrl: `redis://127.0.0.1:${closed}/15`,
    log: (line) => lines.push(line),
  });
  assert.ok(found.url, found.skipped);
  assert.match(found.label, /^private redis-server \S+ on :\d+$/);
  assert.equal(lines.length, 1);
  assert.match(
    lines[0] ?? "",
    new RegExp(`^no Redis at 127\\.0\\.0\\.1:${closed} \\(.*\\): starting a private`),
  );
  const client = new Redis(found.url, { maxRetriesPerRequest: 0 });
  try {
    assert.equal(await client.ping(), "PONG");
  } finally {
    client.disconnect();
  }
  await found.stop();
  assert.ok((await redisVersion(found.url)).error, "the private redis-server still answers after stop()");
});

test("testNodes: an explicitly set HOOKLEDGER_TEST_NODES wins, even empty, and installs nothing", async () => {
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);
  const cacheDir = join(tmpdir(), "hookledger-no-such-cache");
  assert.deepEqual(await testNodes({ env: { HOOKLEDGER_TEST_NODES: "" }, cacheDir, log }), {
    nodes: [],
    from: "HOOKLEDGER_TEST_NODES",
  });
  const listed = await testNodes({ env: { HOOKLEDGER_TEST_NODES: process.execPath }, cacheDir, log });
  assert.deepEqual(listed.nodes, [{ path: process.execPath, version: process.version }]);
  const broken = await testNodes({ env: { HOOKLEDGER_TEST_NODES: "/no/such/node" }, cacheDir, log });
  assert.equal(broken.error, "cannot run /no/such/node (from HOOKLEDGER_TEST_NODES)");
  assert.deepEqual(lines, []);
});

test(".ci/run is a clean install, then exactly npm test", async () => {
  const commands = (await readFile(".ci/run", "utf8"))
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  assert.deepEqual(commands, ["set -euo pipefail", 'cd "$(dirname "$0")/.."', "npm ci", "npm test"]);
});
