import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError, env, Handlers, type HookledgerConfig, resolveConfig } from "hookledger";

const stripe = { name: "stripe", provider: "stripe", secrets: ["whsec_x"] } as const;

function problemsOf(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv = {},
  options?: { secrets?: boolean },
): readonly string[] {
  try {
    resolveConfig(config, environment, options);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail("expected a ConfigError");
}

test("resolveConfig refuses database.url: env('DATABASE_URL') when the variable is unset or empty", () => {
  const config = { database: { url: env("DATABASE_URL") }, sources: [stripe] };
  const expected =
    "database.url: the environment variable DATABASE_URL is not set; set it to your Postgres URL (or remove database.url to use the embedded demo database)";
  assert.deepEqual(problemsOf(config, {}), [expected]);
  assert.deepEqual(problemsOf(config, { DATABASE_URL: "" }), [expected]);
  // Commands that need no secrets still need the database.
  assert.deepEqual(problemsOf(config, {}, { secrets: false }), [expected]);
});

test("resolveConfig refuses an empty inline database.url", () => {
  const problems = problemsOf({ database: { url: "" }, sources: [stripe] });
  assert.equal(problems.length, 1);
  assert.match(problems[0] ?? "", /^database\.url: empty; write your Postgres URL/);
});

test("resolveConfig picks the embedded database only when the configuration names none", () => {
  const none = resolveConfig({ sources: [stripe] }, { HOOKLEDGER_EMBEDDED_PORT: "54400" });
  assert.deepEqual(none.database, { kind: "embedded", port: 54400 });
  assert.equal(none.databaseUrl, undefined);

  const fromEnv = resolveConfig({ sources: [stripe] }, { DATABASE_URL: "postgres://db/app" });
  assert.deepEqual(fromEnv.database, { kind: "url", url: "postgres://db/app" });
  assert.equal(fromEnv.databaseUrl, "postgres://db/app");

  const named = resolveConfig(
    { database: { url: env("APP_DB") }, sources: [stripe] },
    { APP_DB: "postgres://db/named" },
  );
  assert.deepEqual(named.database, { kind: "url", url: "postgres://db/named" });

  const optional = resolveConfig({ database: { url: env.optional("APP_DB") }, sources: [stripe] }, {});
  assert.equal(optional.database.kind, "embedded");
});

test("resolveConfig drops an env.optional secret that is unset or empty and keeps the others in order", () => {
  const config: HookledgerConfig = {
    sources: [
      {
        name: "stripe",
        provider: "stripe",
        secrets: [env("NEW"), env.optional("OLD"), env.optional("OLDER")],
      },
    ],
  };
  assert.deepEqual(resolveConfig(config, { NEW: "whsec_new", OLDER: "" }).sources[0]?.secrets, ["whsec_new"]);
  assert.deepEqual(resolveConfig(config, { NEW: "whsec_new", OLD: "whsec_old" }).sources[0]?.secrets, [
    "whsec_new",
    "whsec_old",
  ]);
  // A required secret is still required.
  assert.match(problemsOf(config, { OLD: "whsec_old" })[0] ?? "", /^sources\[0\]\.secrets\[0\]: .*NEW/);
});

test("resolveConfig refuses a source whose every secret is optional and unset", () => {
  const problems = problemsOf({
    sources: [{ name: "gh", provider: "github", secrets: [env.optional("A"), env.optional("B")] }],
  });
  assert.deepEqual(problems, [
    "sources[0].secrets: no secret of source 'gh' is set (A, B); set one to verify its deliveries",
  ]);
});

test("resolveConfig with { secrets: false } accepts unset secrets and API keys, and still refuses the rest", () => {
  const config: HookledgerConfig = {
    sources: [
      { name: "stripe", provider: "stripe", secrets: [env("STRIPE_SECRET"), env("STRIPE_OLD")] },
      { name: "gh", provider: "github", secrets: [] },
    ],
    schedules: { reconcile: [{ source: "stripe", every: "15m", apiKey: env("STRIPE_API_KEY") }] },
  };
  const resolved = resolveConfig(config, { STRIPE_OLD: "whsec_old" }, { secrets: false });
  assert.deepEqual(resolved.sources[0]?.secrets, ["whsec_old"]);
  assert.deepEqual(resolved.sources[1]?.secrets, []);
  // With secrets checked (serve), the same configuration is refused.
  const problems = problemsOf(config, { STRIPE_OLD: "whsec_old" });
  assert.ok(problems.some((p) => p.startsWith("sources[0].secrets[0]")));
  assert.ok(problems.some((p) => p.startsWith("sources[1].secrets")));
  assert.ok(problems.some((p) => p.startsWith("schedules.reconcile[0].apiKey")));
  // Problems that are not about secrets are still problems.
  const bad = problemsOf(
    { ...config, port: -1, sources: [{ ...stripe, name: "bad name" }] },
    {},
    { secrets: false },
  );
  assert.ok(bad.some((p) => p.startsWith("sources[0].name")));
  assert.ok(bad.some((p) => p.startsWith("port")));
});

test("resolveConfig warns about handlers registered for a source that is not configured", () => {
  const handlers = new Handlers()
    .on("strpe", "invoice.paid", () => {})
    .on("stripe", "invoice.paid", () => {});
  const resolved = resolveConfig(
    { sources: [stripe, { name: "github", provider: "github", secrets: ["gh"] }], handlers },
    {},
  );
  assert.deepEqual(resolved.warnings, [
    "handlers: no source named 'strpe' (handlers for it will never run); sources are stripe, github",
  ]);
});

test("resolveConfig takes PORT and HOST from the environment over the file, and the file over the defaults", () => {
  const file = { sources: [stripe], port: 8080, host: "0.0.0.0" };
  assert.deepEqual(pick(resolveConfig(file, { PORT: "9090", HOST: "::" })), { host: "::", port: 9090 });
  assert.deepEqual(pick(resolveConfig(file, { PORT: "", HOST: "" })), { host: "0.0.0.0", port: 8080 });
  assert.deepEqual(pick(resolveConfig({ sources: [stripe] }, {})), { host: "127.0.0.1", port: 3000 });
  assert.deepEqual(pick(resolveConfig({ sources: [stripe] }, { PORT: "0" })), { host: "127.0.0.1", port: 0 });
  const problems = problemsOf(file, { PORT: "eighty" });
  assert.equal(problems.length, 1);
  assert.match(problems[0] ?? "", /^PORT \(environment\): expected 0-65535, got "eighty"/);
});

function pick(config: { host: string; port: number }) {
  return { host: config.host, port: config.port };
}
