import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmod, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { BIN } from "../helpers/cli.js";
import { freePort, serverPort } from "../helpers/net.js";

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

test("as root in a 0700 directory, hookledger serve without DATABASE_URL keeps the cluster where the postgres user can reach it", {
  skip: userInfo().uid !== 0 && "only root runs the embedded server as the postgres user",
}, async () => {
  const cwd = await mkdtemp(join(tmpdir(), "hookledger-root-"));
  dirs.push(cwd);
  await chmod(cwd, 0o700);
  const { DATABASE_URL: _, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, "serve"], {
    cwd,
    // The admin listener defaults to PORT + 10000, which a test running alongside may hold: it gets a free port too.
    env: {
      ...env,
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      HOOKLEDGER_EMBEDDED_PORT: String(await serverPort()),
    },
  });
  let output = "";
  child.stdout.on("data", (d) => {
    output += d;
  });
  child.stderr.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  try {
    // `listening on` moves from stdout to stderr: either stream will do.
    const deadline = Date.now() + 90_000;
    while (!/listening on http/.test(output) && child.exitCode === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(output, /listening on http/, output);
    assert.doesNotMatch(output, /EACCES|\n\s+at /, "no spawn failure, no stack");
    const moved = output
      .split("\n")
      .filter((line) => line.includes("cannot enter the working directory"))
      .map((line) => JSON.parse(line) as { dataDir: string; instead: string });
    assert.equal(moved.length, 1, output);
    const { dataDir, instead } = moved[0] as { dataDir: string; instead: string };
    dirs.push(join(dataDir, ".."));
    assert.equal(instead, join(cwd, ".hookledger", "pg"));
    assert.ok(dataDir.startsWith(tmpdir()), dataDir);
    const owner = await stat(dataDir);
    assert.notEqual(owner.uid, 0, "the cluster belongs to the postgres user");
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
});
