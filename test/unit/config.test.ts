import assert from "node:assert/strict";
import { test } from "node:test";
import { env } from "../../src/config/env.js";
import type { HookledgerConfig } from "../../src/config/types.js";
import { ConfigError, resolveConfig } from "../../src/config/validate.js";

function problemsOf(config: HookledgerConfig, environment: NodeJS.ProcessEnv = {}): readonly string[] {
  try {
    resolveConfig(config, environment);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail("expected a ConfigError");
}

test("resolveConfig refuses a source whose secret variable is unset, naming the field and the variable", () => {
  const problems = problemsOf({
    sources: [{ name: "stripe", provider: "stripe", secrets: [env("STRIPE_SECRET")] }],
  });
  assert.equal(problems.length, 1);
  assert.match(
    problems[0] ?? "",
    /^sources\[0\]\.secrets\[0\]: .*empty; set the environment variable STRIPE_SECRET/,
  );
});

test("resolveConfig refuses an empty inline secret and a secret with surrounding white space", () => {
  const problems = problemsOf({ sources: [{ name: "s", provider: "github", secrets: ["", " padded "] }] });
  assert.equal(problems.length, 2);
  assert.match(problems[0] ?? "", /secrets\[0\].*empty/);
  assert.match(problems[1] ?? "", /secrets\[1\].*white space/);
});

test("resolveConfig lists every problem at once", () => {
  const problems = problemsOf({
    sources: [
      { name: "bad name!", provider: "stripe", secrets: ["x"] },
      { name: "x", provider: "paypal" as "stripe", secrets: ["x"] },
      { name: "y", provider: "stripe", secrets: [] },
      { name: "y", provider: "github", secrets: ["z"], maxBodyBytes: -1 },
    ],
    port: 70000,
  });
  assert.equal(problems.length, 6, problems.join("\n"));
  assert.ok(problems.some((p) => p.startsWith("sources[0].name")));
  assert.ok(
    problems.some(
      (p) => p.startsWith("sources[1].provider") && p.includes("stripe, github, standard, awardee"),
    ),
  );
  assert.ok(problems.some((p) => p.startsWith("sources[2].secrets")));
  assert.ok(problems.some((p) => p.startsWith("sources[3].name") && p.includes("twice")));
  assert.ok(problems.some((p) => p.startsWith("sources[3].maxBodyBytes")));
  assert.ok(problems.some((p) => p.startsWith("port")));
});

test("resolveConfig refuses no sources at all", () => {
  assert.match(problemsOf({ sources: [] })[0] ?? "", /^sources: configure at least one source/);
});

test("resolveConfig refuses a Standard Webhooks secret that is not base64", () => {
  const problems = problemsOf({
    sources: [{ name: "std", provider: "standard", secrets: ["whsec_not base64!"] }],
  });
  assert.match(problems[0] ?? "", /base64/);
});

test("resolveConfig refuses an awardee header name or algorithm it cannot use", () => {
  const problems = problemsOf({
    sources: [
      {
        name: "aw",
        provider: "awardee",
        secrets: ["s"],
        awardee: { signatureHeader: "bad header", algorithm: "md5" as "sha256" },
      },
    ],
  });
  assert.equal(problems.length, 2);
});

test("resolveConfig resolves environment references and applies defaults", () => {
  const config = resolveConfig(
    { sources: [{ name: "stripe", provider: "stripe", secrets: [env("A"), "inline"] }] },
    { A: "whsec_a", DATABASE_URL: "postgres://x/y", PORT: "0", HOOKLEDGER_SCHEMA: "ledger2" },
  );
  assert.deepEqual(config.sources[0]?.secrets, ["whsec_a", "inline"]);
  assert.equal(config.sources[0]?.maxBodyBytes, 1_048_576);
  assert.equal(config.databaseUrl, "postgres://x/y");
  assert.equal(config.port, 0);
  assert.equal(config.schema, "ledger2");
  assert.equal(config.worker.retry.maxAttempts, 10);
  assert.equal(config.embeddedPort, 54329);
});
