import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { testDatabaseUrl } from "../helpers/db.js";
import { cleanupAfter, runCli, startCli } from "../helpers/cli.js";

const { schemas } = cleanupAfter();
const TOKEN = "cli-dashboard-token-0123456789";

function ledgerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const schema = `dash_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  return { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema, PORT: "0", ...extra };
}

async function signIn(base: string, token: string): Promise<number> {
  const response = await fetch(`${base}/dashboard/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
    body: new URLSearchParams({ token }),
    redirect: "manual",
  });
  return response.status;
}

test("hookledger serve prints 'hookledger dashboard on URL' on the admin listener, and the token signs in there", async () => {
  const env = ledgerEnv({ HOOKLEDGER_DASHBOARD_TOKEN: TOKEN });
  const serve = startCli(["serve", "--no-worker"], { env });
  try {
    const [, admin] = await serve.waitForLine(/^hookledger admin on (http:\/\/\S+)$/m);
    const [, url] = await serve.waitForLine(/^hookledger dashboard on (http:\/\/\S+)$/m);
    assert.equal(url, `${admin}/dashboard/`);
    assert.equal(await signIn(admin ?? "", TOKEN), 303);
    assert.equal(await signIn(admin ?? "", `${TOKEN}-wrong`), 401);
    assert.doesNotMatch(serve.output(), new RegExp(TOKEN), "the token never reaches the log");
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
});

test("hookledger dashboard serves the dashboard alone and SIGTERM exits 0", async () => {
  const env = ledgerEnv({ HOOKLEDGER_DASHBOARD_TOKEN: TOKEN });
  const migrated = await runCli(["migrate"], { env });
  assert.equal(migrated.code, 0, migrated.stderr);
  const dashboard = startCli(["dashboard", "--port", "0"], { env });
  try {
    const [, url] = await dashboard.waitForLine(/^hookledger dashboard on (http:\/\/\S+)\/dashboard\/$/m);
    const login = await fetch(`${url}/dashboard/login`);
    assert.equal(login.status, 200);
    assert.match(await login.text(), /Access token/);
    assert.equal(await signIn(url ?? "", TOKEN), 303);
    assert.equal((await fetch(`${url}/dashboard/api/events`)).status, 401);
  } finally {
    assert.equal(await dashboard.stop("SIGTERM"), 0, dashboard.output());
  }
});

test("hookledger dashboard without a user on a configured database exits 2 naming HOOKLEDGER_DASHBOARD_TOKEN", async () => {
  const env = ledgerEnv();
  delete env.HOOKLEDGER_DASHBOARD_TOKEN;
  assert.equal((await runCli(["migrate"], { env })).code, 0);
  const r = await runCli(["dashboard", "--port", "0"], { env });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /no dashboard user: set HOOKLEDGER_DASHBOARD_TOKEN/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test("hookledger dashboard on a schema never migrated exits 1 saying to run hookledger migrate", async () => {
  const r = await runCli(["dashboard", "--port", "0"], {
    env: ledgerEnv({ HOOKLEDGER_DASHBOARD_TOKEN: TOKEN }),
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /run `hookledger migrate`/);
});

test("a dashboard token shorter than 16 characters refuses to start, naming the variable and the fix", async () => {
  const r = await runCli(["serve"], { env: ledgerEnv({ HOOKLEDGER_DASHBOARD_TOKEN: "short" }) });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /HOOKLEDGER_DASHBOARD_TOKEN .*at least 16 characters .*openssl rand -hex 24/);
  assert.doesNotMatch(r.stderr, /short/);
});
