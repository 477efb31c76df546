// Every command as users run it (the built binary): --help, unknown options and missing values, serve's --port
// and its precedence, a port in use, and the listening line on stderr beside the JSON log on stdout.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { cleanupAfter, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl } from "../helpers/db.js";
import { freePort } from "../helpers/net.js";

const { dirs, schemas } = cleanupAfter();

const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");

function databaseEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const schema = `cli_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: testDatabaseUrl(),
    HOOKLEDGER_SCHEMA: schema,
  };
  delete env.PORT;
  delete env.METRICS_PORT;
  return { ...env, ...extra };
}

function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(port, "127.0.0.1", () => resolve(server));
    server.on("error", reject);
  });
}

const HELP_OF = [
  ["serve"],
  ["worker"],
  ["migrate"],
  ["send"],
  ["stats"],
  ["events"],
  ["events", "requeue"],
  ["replay"],
  ["replay", "stripe"],
  ["replay", "github"],
  ["reconcile"],
  ["reconcile", "stripe"],
  ["prune"],
  ["backfill-versions"],
  ["dashboard"],
  ["outbox"],
  ["forward"],
];

test("hookledger <command> --help and -h exit 0 with the command's options and examples", async () => {
  for (const command of HELP_OF) {
    for (const flag of ["--help", "-h"]) {
      const r = await runCli([...command, flag]);
      const what = `${command.join(" ")} ${flag}`;
      assert.equal(r.code, 0, `${what}: ${r.stderr}`);
      assert.match(r.stdout, /Usage/, what);
      assert.match(r.stdout, /--config FILE/, what);
      assert.match(r.stdout, /Examples:\n(\s+#.*\n)?\s+(\S+=\S+ )*hookledger /, what);
    }
  }
});

test("hookledger --help lists every command, backfill-versions included; --version prints the version", async () => {
  const r = await runCli(["--help"]);
  assert.equal(r.code, 0);
  for (const command of [
    "serve",
    "worker",
    "migrate",
    "send",
    "stats",
    "events",
    "replay",
    "reconcile",
    "prune",
    "dashboard",
    "outbox",
    "forward",
  ]) {
    assert.match(r.stdout, new RegExp(`^ {2}${command} +\\S`, "m"), command);
  }
  assert.match(r.stdout, /^ {2}backfill-versions +seed the version guard from your own tables$/m);
  const v = await runCli(["--version"]);
  assert.equal(v.code, 0);
  assert.match(v.stdout, /^\d+\.\d+\.\d+/);
});

test("hookledger serve --since 24h exits 2 naming the option and listing exactly what serve takes", async () => {
  const r = await runCli(["serve", "--since", "24h"]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    "hookledger serve: unknown option '--since'; serve takes --config, --port, --no-worker, --no-migrate, --ready-file, --help (see `hookledger serve --help`)\n",
  );
});

test("hookledger <command> with an unknown option exits 2 listing that command's options", async () => {
  for (const [args, takes] of [
    [["worker", "--port", "1"], "worker takes --config, --no-migrate, --ready-file, --help"],
    [["migrate", "--dry-run"], "migrate takes --config, --help"],
    [["stats", "--until", "1h"], "stats takes --since, --source, --json, --config, --help"],
    [["prune", "--yes"], "prune takes --older-than, --tombstones-older-than, --source, --batch-size"],
    [["events", "show", "--force"], "events show takes --config, --help, --source, --json"],
    [["replay", "github", "--until", "1h"], "replay github takes --source, --repo, --org, --app, --hook-id"],
    [["reconcile", "stripe", "--until", "1h"], "reconcile stripe takes --source, --since, --dry-run, --json"],
  ] as const) {
    const words: readonly string[] = args;
    const r = await runCli([...words]);
    assert.equal(r.code, 2, `${words.join(" ")}: ${r.stderr}`);
    const option = words.find((a) => a.startsWith("--")) ?? "";
    const command = words.slice(0, words.indexOf(option)).join(" ");
    assert.match(r.stderr, new RegExp(`^hookledger ${command}: unknown option '${option}'; ${takes}`));
    assert.match(r.stderr, new RegExp(`see \`hookledger ${command} --help\``));
    noStack(r.stderr);
  }
});

test("hookledger replay|reconcile|events with an option before the provider or subcommand exits 2 naming both", async () => {
  for (const [command, first] of [
    ["replay", "a provider first: replay stripe … or replay github …"],
    ["reconcile", "a provider first: reconcile stripe …"],
    ["events", "a subcommand first: list, show, retry or requeue"],
  ] as const) {
    const r = await runCli([command, "--since", "2h"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(`^hookledger ${command}: unknown option '--since'; ${command} takes ${first}`),
    );
  }
});

test("hookledger <command> with an option missing its value exits 2 naming the option", async () => {
  for (const args of [
    ["serve", "--port"],
    ["serve", "--config"],
    ["stats", "--since"],
    ["prune", "--older-than"],
    ["events", "list", "--source"],
    ["replay", "stripe", "--source"],
  ]) {
    const r = await runCli(args);
    assert.equal(r.code, 2, `${args.join(" ")}: ${r.stderr}`);
    const option = args.at(-1) ?? "";
    const command = args.slice(0, -1).join(" ");
    assert.match(r.stderr, new RegExp(`^hookledger ${command}: ${option} needs a value; ${command} takes `));
    noStack(r.stderr);
  }
});

test("hookledger serve --port beats PORT and the config file's port; the listening line goes to stderr", async () => {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-port-"));
  dirs.push(dir);
  const [configPort, envPort, flagPort] = [await freePort(), await freePort(), await freePort()];
  const file = join(dir, "hookledger.config.mjs");
  await writeFile(
    file,
    `export default { port: ${configPort}, sources: [{ name: "stripe", provider: "stripe", secrets: [{ env: "HL_PORT_TEST_SECRET" }] }] };\n`,
  );
  const adminPort = await freePort();
  const env = databaseEnv({
    PORT: String(envPort),
    ADMIN_PORT: String(adminPort),
    HL_PORT_TEST_SECRET: "whsec_test",
  });
  const serve = startCli(["serve", "--config", file, "--port", String(flagPort)], { env });
  try {
    const [, url] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m);
    assert.equal(url, `http://127.0.0.1:${flagPort}`);
    // /metrics and /readyz answer on the admin listener (ADMIN_PORT, loopback), never on the webhook port.
    const [, admin] = await serve.waitForLine(/^hookledger admin on (http:\/\/\S+)$/m);
    assert.equal(admin, `http://127.0.0.1:${adminPort}`);
    for (const path of ["/metrics", "/readyz", "/healthz"]) {
      assert.equal((await fetch(`${url}${path}`)).status, 404, `${path} on the webhook port`);
    }
    assert.equal((await fetch(`${admin}/healthz`)).status, 200);
    assert.equal((await fetch(`${admin}/metrics`)).status, 200);
    const records = serve
      .stdout()
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { msg: string; url?: string });
    assert.doesNotMatch(serve.stdout(), /hookledger listening on/, "stdout holds JSON records only");
    assert.ok(
      records.some((r) => r.msg === "listening" && r.url === url),
      "a structured listening record",
    );
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
});

test("hookledger serve --port with a port in use exits 1 with one line naming the port and the fix", async () => {
  const port = await freePort();
  const taken = await listenOn(port);
  try {
    const r = await runCli(["serve", "--port", String(port)], { env: databaseEnv() });
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stderr,
      `hookledger: port ${port} is in use; set PORT or --port to another port, or stop the process using it\n`,
    );

    const worker = await runCli(["worker"], { env: databaseEnv({ METRICS_PORT: String(port) }) });
    assert.equal(worker.code, 1, worker.stderr);
    assert.match(
      worker.stderr,
      new RegExp(`^hookledger: port ${port} is in use; set METRICS_PORT to another port`),
    );
    noStack(worker.stderr);
  } finally {
    taken.close();
  }
});

test("hookledger serve --port with a value that is not a port exits 2", async () => {
  const r = await runCli(["serve", "--port", "http"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--port http is not a port; give 0-65535/);
});

// Four ports free a moment ago: p and p + 1 (two neighbours' webhook ports) and their default admin ports.
async function adjacentPorts(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const held: Server[] = [];
    try {
      for (const p of [port, port + 1, port + 10_000, port + 10_001]) held.push(await listenOn(p));
      return port;
    } catch {
      // One of them is taken: try another.
    } finally {
      for (const server of held) await new Promise((r) => server.close(r));
    }
  }
}

test("two hookledger serve on adjacent ports start together, each admin listener on its port + 10000", async () => {
  const port = await adjacentPorts();
  // ADMIN_PORT empty: the default, which startCli otherwise replaces with a free port.
  const env = databaseEnv({ ADMIN_PORT: "" });
  await runCli(["migrate"], { env });
  const first = startCli(["serve", "--port", String(port)], { env });
  const second = startCli(["serve", "--port", String(port + 1)], { env });
  try {
    for (const [cli, webhook] of [
      [first, port],
      [second, port + 1],
    ] as const) {
      await cli.waitForLine(new RegExp(`listening on http://127\\.0\\.0\\.1:${webhook}\\b`));
      await cli.waitForLine(new RegExp(`admin on http://127\\.0\\.0\\.1:${webhook + 10_000}\\b`));
      const ready = await fetch(`http://127.0.0.1:${webhook + 10_000}/healthz`);
      assert.equal(ready.status, 200);
    }
  } finally {
    assert.equal(await first.stop(), 0, first.output());
    assert.equal(await second.stop(), 0, second.output());
  }
});
