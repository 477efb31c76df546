import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { cleanupAfter, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl } from "../helpers/db.js";
import { freePort, serverPort } from "../helpers/net.js";

const { dirs, schemas } = cleanupAfter();

async function tempDir(parent = tmpdir()): Promise<string> {
  const dir = await mkdtemp(join(parent, "hookledger-config-"));
  dirs.push(dir);
  return dir;
}
function freshSchema(): string {
  const schema = `cfg_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  return schema;
}
/** The environment without any database or secret of the machine running the tests. */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DATABASE_URL: _url, PORT: _port, HOST: _host, ...rest } = process.env;
  return { ...rest, ...extra };
}
const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");

const STRIPE_CONFIG = `export default {
  database: { url: { env: "DATABASE_URL" } },
  sources: [{ name: "stripe", provider: "stripe", secrets: [{ env: "HL_TEST_STRIPE_SECRET" }] }],
};
`;

test("serve and migrate refuse a config whose database.url names an unset DATABASE_URL, starting no embedded Postgres", async () => {
  const dir = await tempDir();
  await writeFile(join(dir, "hookledger.config.mjs"), STRIPE_CONFIG);
  const env = cleanEnv({
    HL_TEST_STRIPE_SECRET: "whsec_x",
    HOOKLEDGER_EMBEDDED_PORT: String(await serverPort()),
  });
  for (const command of ["serve", "migrate", "worker", "stats"]) {
    for (const value of [undefined, ""]) {
      const r = await runCli([command], {
        cwd: dir,
        env: value === undefined ? env : { ...env, DATABASE_URL: value },
      });
      assert.equal(r.code, 1, `${command}: ${r.stdout}${r.stderr}`);
      assert.match(
        r.stderr,
        /database\.url: the environment variable DATABASE_URL is not set; set it to your Postgres URL \(or remove database\.url to use the embedded demo database\)/,
      );
      assert.doesNotMatch(r.stdout + r.stderr, /listening/);
      noStack(r.stderr);
    }
  }
  assert.equal(existsSync(join(dir, ".hookledger")), false, "no embedded Postgres was started");
});

test("migrate and stats run without the webhook secrets; serve still refuses without them", async () => {
  const dir = await tempDir();
  await writeFile(join(dir, "hookledger.config.mjs"), STRIPE_CONFIG);
  const env = cleanEnv({ DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: freshSchema() });
  const migrated = await runCli(["migrate"], { cwd: dir, env });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.match(migrated.stdout, /^applied /);
  const stats = await runCli(["stats", "--json"], { cwd: dir, env });
  assert.equal(stats.code, 0, stats.stderr);
  assert.doesNotThrow(() => JSON.parse(stats.stdout));
  const events = await runCli(["events", "list"], { cwd: dir, env });
  assert.equal(events.code, 0, events.stderr);
  const serve = await runCli(["serve"], { cwd: dir, env: { ...env, PORT: "0" } });
  assert.equal(serve.code, 1);
  assert.match(
    serve.stderr,
    /sources\[0\]\.secrets\[0\].*set the environment variable HL_TEST_STRIPE_SECRET/,
  );
});

test("hookledger.config.ts is found by default and loads (through tsx on this Node)", async () => {
  const dir = await tempDir();
  await writeFile(
    join(dir, "hookledger.config.ts"),
    `interface Source { name: string; provider: "github"; secrets: { env: string }[] }
const github: Source = { name: "github", provider: "github", secrets: [{ env: "HL_TEST_GH_SECRET" }] };
export default { sources: [github] satisfies Source[] };
`,
  );
  const env = cleanEnv({ DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: freshSchema() });
  const r = await runCli(["migrate"], { cwd: dir, env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^applied /);
  // The file's configuration is the one in force: its source needs its secret to serve.
  const serve = await runCli(["serve"], { cwd: dir, env: { ...env, PORT: "0" } });
  assert.equal(serve.code, 1);
  assert.match(serve.stderr, /hookledger\.config\.ts: invalid configuration:[\s\S]*HL_TEST_GH_SECRET/);
});

test("serve warns at start about handlers registered for a source that is not configured", async () => {
  // Inside the package, so `import … from "hookledger"` resolves to this package (Node's self-reference).
  const dir = await tempDir(process.cwd());
  const file = join(dir, "hookledger.config.mjs");
  await writeFile(
    file,
    `import { Handlers } from "hookledger";
export default {
  sources: [
    { name: "stripe", provider: "stripe", secrets: ["whsec_x"] },
    { name: "github", provider: "github", secrets: ["gh"] },
  ],
  handlers: new Handlers().on("strpe", "invoice.paid", () => {}),
};
`,
  );
  const env = cleanEnv({ DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: freshSchema(), PORT: "0" });
  const serve = startCli(["serve", "--config", file], { env });
  try {
    await serve.waitForLine(/^hookledger listening on /m);
    assert.match(
      serve.output(),
      /handlers: no source named 'strpe' \(handlers for it will never run\); sources are stripe, github/,
    );
  } finally {
    assert.equal(await serve.stop(), 0);
  }
});

test("a refused database connection is one line naming host:port and 'check DATABASE_URL', never the password", async () => {
  const dir = await tempDir();
  await writeFile(join(dir, "hookledger.config.mjs"), STRIPE_CONFIG);
  const port = await freePort();
  const env = cleanEnv({
    DATABASE_URL: `postgres://postgres:hunter2secret@127.0.0.1:${port}/appdb`,
    HL_TEST_STRIPE_SECRET: "whsec_x",
    PORT: "0",
  });
  // serve and worker wait for such a server instead (test/once/outage-cli.test.ts).
  for (const command of [["migrate"], ["stats"], ["events", "list"]]) {
    const r = await runCli(command, { cwd: dir, env });
    const label = command.join(" ");
    assert.equal(r.code, 1, `${label}: ${r.stdout}${r.stderr}`);
    assert.match(
      r.stderr,
      new RegExp(
        `^hookledger: cannot reach Postgres at 127\\.0\\.0\\.1:${port}\\S*: connection refused.*; check DATABASE_URL\\n$`,
      ),
      label,
    );
    assert.doesNotMatch(r.stdout + r.stderr, /hunter2secret/, label);
    noStack(r.stderr);
  }
  // Commands that open the ledger themselves name the database too.
  const stats = await runCli(["stats"], { cwd: dir, env });
  assert.match(stats.stderr, new RegExp(`127\\.0\\.0\\.1:${port}/appdb`));
});

test("a database that does not exist is named with its server", async () => {
  const dir = await tempDir();
  const url = new URL(testDatabaseUrl());
  url.pathname = `/no_such_db_${randomBytes(3).toString("hex")}`;
  const r = await runCli(["events", "list"], { cwd: dir, env: cleanEnv({ DATABASE_URL: url.href }) });
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    new RegExp(
      `Postgres at ${url.hostname}:${url.port || 5432}${url.pathname}: database "${url.pathname.slice(1)}" does not exist; check DATABASE_URL`,
    ),
  );
  noStack(r.stderr);
});

test("every command that loads the config refuses a misspelt field, one line naming its path and the fix", async () => {
  const dir = await tempDir();
  await writeFile(
    join(dir, "hookledger.config.mjs"),
    `export default {
  workr: { concurrency: 4 },
  sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"], maxBodyByts: 10 }],
};
`,
  );
  const env = cleanEnv({ DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: freshSchema(), PORT: "0" });
  for (const command of [["migrate"], ["worker"], ["serve"], ["stats"], ["events", "list"], ["send"]]) {
    const label = command.join(" ");
    const r = await runCli(command, { cwd: dir, env });
    assert.equal(r.code, 1, `${label}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, /^ {2}- config\.workr: unknown field; did you mean worker\?$/m, label);
    assert.match(
      r.stderr,
      /^ {2}- config\.sources\[0\]\.maxBodyByts: unknown field; did you mean maxBodyBytes\?$/m,
      label,
    );
    assert.doesNotMatch(r.stdout + r.stderr, /listening|applied/, label);
    noStack(r.stderr);
  }
});
