// `hookledger replay github` against a local fake of GitHub's hook deliveries API and a real ledger: cursor
// pagination, grouping by guid, the --since stop, dry run, JSON, and GitHub's refusals and 5xx answers.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, test } from "node:test";
import type { CommandIO } from "../../src/cli/commands/types.js";
import { replayGithubCommand } from "../../src/cli/commands/replay-github.js";
import { runCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { delivery, type FakeGithub, startFakeGithub } from "../helpers/fake-github.js";

const TOKEN = "ghp_fake_token_never_printed";
let t: TestLedger;
let gh: FakeGithub;

before(async () => {
  t = await freshLedger();
  gh = await startFakeGithub(TOKEN);
  Object.assign(process.env, {
    DATABASE_URL: t.url,
    HOOKLEDGER_SCHEMA: t.schema,
    HOOKLEDGER_GITHUB_API_BASE: gh.url,
    GITHUB_TOKEN: TOKEN,
  });
});

after(async () => {
  await gh?.close();
  await t?.drop();
});

/** Runs the command with a captured io (and, given `now`, that clock); a thrown error comes back as `error`. */
async function replay(args: string[], { isTTY = false, now }: { isTTY?: boolean; now?: number } = {}) {
  let out = "";
  let err = "";
  const io: CommandIO = {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    isTTY,
  };
  try {
    const code = await replayGithubCommand(
      ["--source", "github", ...args],
      io,
      now === undefined ? {} : { now },
    );
    return { code, out, err, error: undefined };
  } catch (error) {
    return { code: undefined, out, err, error: error as Error };
  }
}

const repoArgs = (repo: string, hookId: number) => ["--repo", `octo/${repo}`, "--hook-id", String(hookId)];
const listRequests = (path: string) =>
  gh.requests.filter((r) => r.method === "GET" && r.path === `${path}/deliveries`);

test("replay github pages deliveries by Link cursor and redelivers each failed guid once", async () => {
  const hook = "/repos/octo/paged/hooks/1";
  const deliveries = Array.from({ length: 250 }, (_, i) => delivery(`paged-${i}`, i + 1, i % 50 !== 0));
  gh.hook(hook, deliveries);
  const before = gh.redelivered.length;
  const { code, out, error } = await replay([...repoArgs("paged", 1), "--json"]);
  assert.equal(error, undefined);
  assert.equal(code, 0);
  const report = JSON.parse(out);
  assert.deepEqual([report.fetched, report.guids, report.deliveredOk, report.new], [250, 250, 245, 5]);
  const pages = listRequests(hook);
  assert.deepEqual(
    pages.map((r) => [r.query.get("per_page"), r.query.get("cursor")]),
    [
      ["100", null],
      ["100", "v1_100"],
      ["100", "v1_200"],
    ],
  );
  // Oldest first: i = 200, 150, 100, 50, 0.
  const expected = [200, 150, 100, 50, 0].map((i) => deliveries[i]?.id);
  assert.deepEqual(gh.redelivered.slice(before), expected);
  assert.ok(pages.every((r) => r.authorization === `token ${TOKEN}`));
});

test("replay github groups by guid: a later OK attempt or a ledger row means no redelivery", async () => {
  const hook = "/repos/octo/grouped/hooks/2";
  const failedThenOk = [delivery("g-recovered", 30, false), delivery("g-recovered", 20, true)];
  const onlyFailures = [delivery("g-lost", 40, false), delivery("g-lost", 25, false)];
  const inLedger = [delivery("g-in-ledger", 15, false)];
  gh.hook(hook, [...failedThenOk, ...onlyFailures, ...inLedger]);
  await claimTestEvent(t.pool, t.ledger, { source: "github", id: "g-in-ledger" });
  const before = gh.redelivered.length;
  const { code, out } = await replay([...repoArgs("grouped", 2), "--json"]);
  assert.equal(code, 0);
  const report = JSON.parse(out);
  assert.deepEqual(
    [report.fetched, report.guids, report.duplicate, report.deliveredOk, report.new, report.failed],
    [5, 3, 1, 1, 1, 0],
  );
  assert.deepEqual(report.newIds, ["g-lost"]);
  // The newest of g-lost's failed attempts.
  assert.deepEqual(gh.redelivered.slice(before), [onlyFailures[1]?.id]);
});

test("replay github stops paging at --since and requests nothing in a dry run", async () => {
  const hook = "/repos/octo/since/hooks/3";
  // One clock for the deliveries and the replay: since-149, exactly 150 minutes old, is the first at --since.
  const now = Date.parse("2026-01-31T12:00:00Z");
  gh.hook(
    hook,
    Array.from({ length: 300 }, (_, i) => delivery(`since-${i}`, i + 1, false, { now })),
  );
  const before = gh.redelivered.length;
  const { code, out } = await replay([...repoArgs("since", 3), "--since", "150m", "--dry-run"], { now });
  assert.equal(code, 0);
  assert.equal(listRequests(hook).length, 2, "the third page is older than --since and never fetched");
  assert.equal(gh.redelivered.length, before);
  assert.equal(gh.requests.filter((r) => r.method === "POST" && r.path.startsWith(hook)).length, 0);
  assert.match(out, /^fetch: 150 deliveries of 150 events/m);
  assert.match(out, /150 missing \(dry run/);
  assert.match(out, /^missing: since-149 since-148 /m);
});

test("replay github clamps a --since past the 3-day window and reports it", async () => {
  gh.hook("/orgs/octo/hooks/4", [delivery("org-1", 10, false), delivery("org-old", 5 * 24 * 60, false)]);
  const { code, out } = await replay(["--org", "octo", "--hook-id", "4", "--since", "7d", "--json"]);
  assert.equal(code, 0);
  const report = JSON.parse(out);
  assert.equal(report.window.clamped, true);
  assert.match(report.notes.join("\n"), /--since 7d .*clamped/);
  assert.deepEqual([report.fetched, report.new], [1, 1]);
});

test("replay github --app lists the app's deliveries with the JWT as a bearer token", async () => {
  const jwt = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiIxIn0.c2ln";
  const app = await startFakeGithub(jwt);
  try {
    app.hook("/app/hook", [delivery("app-1", 5, false)]);
    process.env.HOOKLEDGER_GITHUB_API_BASE = app.url;
    process.env.TEST_APP_JWT = jwt;
    const { code, out } = await replay(["--app", "--token-env", "TEST_APP_JWT"]);
    assert.equal(code, 0, out);
    assert.equal(app.requests[0]?.authorization, `bearer ${jwt}`);
    assert.equal(app.redelivered.length, 1);
  } finally {
    process.env.HOOKLEDGER_GITHUB_API_BASE = gh.url;
    await app.close();
  }
});

test("replay github turns a 401 into an error naming the token scope, without printing the token", async () => {
  process.env.BAD_TOKEN = "ghp_wrong";
  const { error, out } = await replay([...repoArgs("paged", 1), "--token-env", "BAD_TOKEN"]);
  assert.equal(error?.name, "GithubApiError");
  assert.match(error?.message ?? "", /401.*admin:repo_hook/);
  assert.doesNotMatch(`${error?.message}${out}`, /ghp_wrong/);
});

test("replay github names the hook id when GitHub answers 404", async () => {
  const { error } = await replay(repoArgs("nothing-here", 99));
  assert.match(error?.message ?? "", /404.*hook 99 of octo\/nothing-here was not found.*--hook-id/);
});

test("replay github retries a 502 and a secondary rate limit, then succeeds", async () => {
  const hook = "/repos/octo/flaky/hooks/5";
  gh.hook(hook, [delivery("flaky-1", 5, false)]);
  gh.failNext("GET", /\/flaky\//, { status: 502, body: { message: "Bad Gateway" } });
  gh.failNext("POST", /\/flaky\//, {
    status: 403,
    headers: { "retry-after": "0" },
    body: { message: "You have exceeded a secondary rate limit" },
  });
  const before = gh.redelivered.length;
  const { code, out } = await replay([...repoArgs("flaky", 5), "--json"]);
  assert.equal(code, 0);
  assert.deepEqual([JSON.parse(out).new, JSON.parse(out).failed], [1, 0]);
  assert.equal(listRequests(hook).length, 2);
  assert.equal(gh.redelivered.length, before + 1);
});

test("replay github reports a redelivery GitHub keeps failing and exits 1", async () => {
  gh.hook("/repos/octo/down/hooks/6", [delivery("down-1", 5, false), delivery("down-2", 6, false)]);
  const outage = { status: 503, headers: { "retry-after": "0" }, body: { message: "Service Unavailable" } };
  gh.failNext("POST", /\/down\/hooks\/6\/deliveries\/\d+\/attempts/, outage, outage, outage, outage);
  const { code, out } = await replay([...repoArgs("down", 6), "--json"]);
  assert.equal(code, 1);
  const report = JSON.parse(out);
  assert.deepEqual([report.new, report.failed], [1, 1]);
  assert.deepEqual(report.newIds, ["down-1"]);
  assert.match(report.failures[0].error, /503.*retried up to 3 times/);
});

test("replay github rejects usage mistakes with exit code 2", async () => {
  for (const [args, pattern] of [
    [["--hook-id", "1"], /exactly one of --repo/],
    [["--repo", "octo", "--hook-id", "1"], /not OWNER\/NAME/],
    [["--repo", "octo/app"], /missing --hook-id/],
    [["--app", "--hook-id", "1"], /does not apply to --app/],
    [[...repoArgs("app", 1), "--since", "yesterday"], /neither a duration/],
    [[...repoArgs("app", 1), "--token-env", "UNSET_TOKEN_VAR"], /no token in UNSET_TOKEN_VAR/],
  ] as const) {
    const { error } = await replay([...args]);
    assert.match(error?.message ?? "", pattern);
    assert.equal((error as { exitCode?: number }).exitCode, 2);
  }
  const { code, out } = await replay(["--help"]);
  assert.equal(code, 0);
  assert.match(out, /Examples:/);
});

// The binary is built by `npm test` (scripts/test.mjs) before the suites run.
test("hookledger replay github (the built binary) prints the report", {
  skip: !existsSync("dist/cli/main.js") && "not built: run `npm run build` first",
}, async () => {
  const lost = delivery("cli-1", 5, false);
  gh.hook("/repos/octo/cli/hooks/7", [lost]);
  const { code, stdout, stderr } = await runCli([
    "replay",
    "github",
    "--source",
    "github",
    ...repoArgs("cli", 7),
  ]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /1 fetched, 0 already in the ledger, 1 new, 0 failed/);
  assert.deepEqual(gh.redelivered.slice(-1), [lost.id]);
  assert.doesNotMatch(stdout + stderr, new RegExp(TOKEN));
});
