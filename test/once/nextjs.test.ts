// A real Next.js app (test/fixtures/next-app), built once with `next build` and served by `next start`:
// App Router route handlers with createFetchHandler and createFetchGuard, and pages API routes with
// createNodeHandler, with and without `bodyParser: false`. It imports "hookledger" as an installed package.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { freePort } from "../helpers/net.js";
import { type Reply, STRIPE_SECRETS, send, stripeBody, stripeHeaders } from "../helpers/http.js";

const REPO = resolve(import.meta.dirname, "../..");
const NEXT_BIN = join(REPO, "node_modules/next/dist/bin/next");
let t: TestLedger | undefined;
let dir: string | undefined;
let server: ChildProcess | undefined;
let url = "";
let output = "";

/** Runs a command in the app, keeping its output for the failure message. */
function run(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [NEXT_BIN, ...args], { cwd: dir, env, stdio: "pipe" });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk));
    child.on("error", fail);
    child.on("exit", (code) =>
      code === 0 ? done() : fail(new Error(`next ${args.join(" ")} exited ${code}:\n${out}`)),
    );
  });
}

/**
 * The app's node_modules: the repo's packages by symlink, and hookledger as a copy of what the package ships
 * (package.json and dist), so it resolves as an installed dependency. The app has no TypeScript, so Next never
 * runs a package manager in it (one would prune these symlinks through to the repo's node_modules).
 */
async function install(app: string): Promise<void> {
  const modules = join(app, "node_modules");
  await mkdir(modules);
  for (const entry of await readdir(join(REPO, "node_modules"))) {
    await symlink(join(REPO, "node_modules", entry), join(modules, entry));
  }
  const own = join(modules, "hookledger");
  await mkdir(own);
  await cp(join(REPO, "package.json"), join(own, "package.json"));
  await cp(join(REPO, "dist"), join(own, "dist"), { recursive: true });
}

function stop(): Promise<void> {
  const child = server;
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => process.kill(-(child.pid as number), "SIGKILL"), 5000);
    child.once("exit", () => {
      clearTimeout(kill);
      done();
    });
    process.kill(-(child.pid as number), "SIGTERM");
  });
}

// Even when the test run itself is cut short, the server's process group goes with it.
const killOnExit = () => {
  if (server?.pid && server.exitCode === null) process.kill(-server.pid, "SIGKILL");
};
process.once("exit", killOnExit);

before(
  async () => {
    t = await freshLedger();
    dir = await mkdtemp(join(tmpdir(), "hookledger-next-"));
    await cp(join(REPO, "test/fixtures/next-app"), dir, { recursive: true });
    await install(dir);
    const env = { ...process.env, NEXT_TELEMETRY_DISABLED: "1" };
    // Webpack: Turbopack refuses node_modules symlinked from outside the app's root.
    await run(["build", "--webpack"], env);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, [NEXT_BIN, "start", "-H", "127.0.0.1", "-p", String(port)], {
      cwd: dir,
      detached: true,
      stdio: "pipe",
      env: {
        ...env,
        HL_DATABASE_URL: t.url,
        HL_SCHEMA: t.schema,
        HL_STRIPE_SECRET: STRIPE_SECRETS[0],
      },
    });
    server.stdout?.on("data", (chunk: Buffer) => (output += chunk));
    server.stderr?.on("data", (chunk: Buffer) => (output += chunk));
    await waitFor(
      "next start to answer",
      async () => {
        if (server?.exitCode !== null) throw new Error(`next start exited:\n${output}`);
        return send(`${url}/webhooks/stripe`, { method: "GET" }).then(
          (reply) => reply.status === 405,
          () => false,
        );
      },
      60_000,
    );
  },
  { timeout: 300_000 },
);

after(async () => {
  await stop();
  process.off("exit", killOnExit);
  if (dir) await rm(dir, { recursive: true, force: true });
  await t?.drop();
});

/** Signed now: the app's receiver keeps the real clock. */
const post = (path: string, payload: string, secret: string = STRIPE_SECRETS[0]): Promise<Reply> =>
  send(`${url}${path}`, {
    headers: stripeHeaders(payload, secret, Math.floor(Date.now() / 1000)),
    body: payload,
  });

async function row(id: string) {
  const ledger = t as TestLedger;
  const { rows } = await ledger.pool.query<{ status: string; duplicates: number; body: Buffer }>(
    `select e.status, coalesce(d.count, 0)::int as duplicates, e.body
       from ${ledger.ledger.s}.event_records e
       left join ${ledger.ledger.s}.duplicates d on d.source = e.source and d.dedupe_key = e.dedupe_key
      where e.source = 'stripe' and e.dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

function assertJson(reply: Reply, status: number, expected: Record<string, unknown>): void {
  assert.equal(reply.status, status, `${reply.text}\n${output}`);
  assert.deepEqual(JSON.parse(reply.text), expected);
}

test("next (App Router, createFetchHandler): 200 accepted, then 200 duplicate; a bad signature → 401; GET → 405", async () => {
  const payload = stripeBody("evt_next_app");
  assertJson(await post("/webhooks/stripe", payload), 200, { status: "accepted", id: "evt_next_app" });
  assertJson(await post("/webhooks/stripe", payload), 200, { status: "duplicate", id: "evt_next_app" });
  const stored = await row("evt_next_app");
  assert.equal(stored?.status, "pending");
  assert.ok(stored?.body.equals(Buffer.from(payload)), "the stored body is not the bytes sent");
  assert.equal(stored?.duplicates, 1);

  const forged = stripeBody("evt_next_forged");
  assert.equal((await post("/webhooks/stripe", forged, "whsec_wrong")).status, 401);
  assert.equal(await row("evt_next_forged"), undefined);
  const get = await send(`${url}/webhooks/stripe`, { method: "GET" });
  assert.equal(get.status, 405);
  assert.equal(get.headers.allow, "POST");
});

test("next (App Router, createFetchGuard): the handler runs and reads the bytes, the row settles; the duplicate is answered without it", async () => {
  const payload = stripeBody("evt_next_guard");
  assertJson(await post("/guarded/stripe", payload), 200, {
    handled: "evt_next_guard",
    bytes: Buffer.byteLength(payload),
  });
  assert.equal((await row("evt_next_guard"))?.status, "settled");
  assertJson(await post("/guarded/stripe", payload), 200, { status: "duplicate", id: "evt_next_guard" });
  assert.equal((await post("/guarded/stripe", stripeBody("evt_next_guard_401"), "whsec_wrong")).status, 401);
  assert.equal(await row("evt_next_guard_401"), undefined);
});

test("next (pages API, bodyParser: false, createNodeHandler): 200 accepted, then duplicate; a bad signature → 401", async () => {
  const payload = stripeBody("evt_next_pages");
  assertJson(await post("/api/webhooks/stripe", payload), 200, { status: "accepted", id: "evt_next_pages" });
  assertJson(await post("/api/webhooks/stripe", payload), 200, { status: "duplicate", id: "evt_next_pages" });
  const stored = await row("evt_next_pages");
  assert.equal(stored?.status, "pending");
  assert.ok(stored?.body.equals(Buffer.from(payload)), "the stored body is not the bytes sent");
  const forged = stripeBody("evt_next_pages_forged");
  assert.equal((await post("/api/webhooks/stripe", forged, "whsec_wrong")).status, 401);
  assert.equal(await row("evt_next_pages_forged"), undefined);
});

test("next (pages API with Next's body parser on): 500 body_already_parsed naming bodyParser: false, no row", async () => {
  const reply = await post("/api/parsed/stripe", stripeBody("evt_next_parsed"));
  assert.equal(reply.status, 500, reply.text);
  const body = JSON.parse(reply.text) as { error: string; fix: string };
  assert.equal(body.error, "body_already_parsed");
  assert.match(body.fix, /bodyParser: false/);
  assert.equal(await row("evt_next_parsed"), undefined);
});
