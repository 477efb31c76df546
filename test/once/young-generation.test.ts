import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { testDatabaseUrl } from "../helpers/db.js";
import { BIN, cleanupAfter, runCli, startCli } from "../helpers/cli.js";

// This test's node, then each extra node npm test runs the suites under (22 and 24, HOOKLEDGER_TEST_NODES): only those have process.execve, which the cap needs.
const nodes = [
  process.execPath,
  ...(process.env.HOOKLEDGER_TEST_NODES ?? "").split(":").filter((n) => n !== ""),
];
const { schemas } = cleanupAfter();
const schema = `cli_yg_${randomBytes(4).toString("hex")}`;
schemas.push(schema);

const hasExecve = (node: string) =>
  spawnSync(node, ["-p", "typeof process.execve"], { encoding: "utf8" }).stdout.trim() === "function";

/** Starts `serve --no-worker` under `node`; returns its command line once it listens, and the pid it logged. */
async function serveCommandLine(
  node: string,
  extra: NodeJS.ProcessEnv,
): Promise<{ argv: string[]; samePid: boolean }> {
  const env = {
    ...process.env,
    DATABASE_URL: testDatabaseUrl(),
    HOOKLEDGER_SCHEMA: schema,
    PORT: "0",
    ...extra,
  };
  const serve = startCli(["serve", "--no-worker"], { env, node });
  try {
    await serve.waitForLine(/^hookledger listening on /m);
    const argv = (await readFile(`/proc/${serve.child.pid}/cmdline`, "utf8"))
      .split("\0")
      .filter((a) => a !== "");
    const logged = /"pid":(\d+)/.exec(serve.stdout())?.[1];
    return { argv, samePid: logged === String(serve.child.pid) };
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
}

for (const node of nodes) {
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
  const execve = hasExecve(node);

  test(`hookledger serve under ${version} ${execve ? "restarts in place with 8 MB semi-spaces" : "runs as started (no process.execve)"}; HOOKLEDGER_SEMI_SPACE_MB and NODE_OPTIONS choose otherwise`, async () => {
    const plain = await serveCommandLine(node, {});
    const semi = plain.argv.filter((a) => a.startsWith("--max-semi-space-size"));
    assert.deepEqual(semi, execve ? ["--max-semi-space-size=8"] : [], plain.argv.join(" "));
    assert.ok(plain.samePid, "the pid that logged is the pid that was started");

    const chosen = await serveCommandLine(node, { HOOKLEDGER_SEMI_SPACE_MB: "12" });
    assert.deepEqual(
      chosen.argv.filter((a) => a.startsWith("--max-semi-space-size")),
      execve ? ["--max-semi-space-size=12"] : [],
    );

    const off = await serveCommandLine(node, { HOOKLEDGER_SEMI_SPACE_MB: "0" });
    assert.ok(!off.argv.some((a) => a.startsWith("--max-semi-space-size")), off.argv.join(" "));

    const own = await serveCommandLine(node, { NODE_OPTIONS: "--max-semi-space-size=16" });
    assert.ok(
      !own.argv.some((a) => a.startsWith("--max-semi-space-size")),
      "the operator's own size is left alone",
    );

    // Started with an IPC channel (child_process.fork, pm2's fork mode): a restart would lose it, so none happens.
    const env = {
      ...process.env,
      DATABASE_URL: testDatabaseUrl(),
      HOOKLEDGER_SCHEMA: schema,
      PORT: "0",
      ADMIN_PORT: "0",
    };
    const forked = spawn(node, [BIN, "serve", "--no-worker"], {
      env,
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    try {
      let err = "";
      forked.stderr?.on("data", (d) => {
        err += d;
      });
      const deadline = Date.now() + 60_000;
      while (!/hookledger listening on /.test(err) && forked.exitCode === null && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(err, /hookledger listening on /);
      const argv = await readFile(`/proc/${forked.pid}/cmdline`, "utf8");
      assert.doesNotMatch(argv, /--max-semi-space-size/);
      assert.ok(forked.connected, "the IPC channel is still open");
    } finally {
      const exited = new Promise((r) => forked.once("exit", r));
      forked.kill("SIGTERM");
      await exited;
    }
  });
}

const BAD_MEMORY_SETTINGS = {
  HOOKLEDGER_SEMI_SPACE_MB:
    /HOOKLEDGER_SEMI_SPACE_MB must be a whole number of MB from 1 to 1024, or 0 .*got 'lots'/,
  HOOKLEDGER_HEAP_GROWING_PERCENT:
    /HOOKLEDGER_HEAP_GROWING_PERCENT must be a whole number of percent from 1 to 1000, or 0 .*got 'lots'/,
};

for (const [variable, message] of Object.entries(BAD_MEMORY_SETTINGS)) {
  test(`hookledger serve with ${variable}=lots exits 2 naming the variable and what it takes`, async () => {
    const env = { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema, PORT: "0" };
    const r = await runCli(["serve"], { env: { ...env, [variable]: "lots" } });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
  });
}
