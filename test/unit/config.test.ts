import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import { env } from "hookledger";
import { resolveConfig } from "hookledger";
import type { GenericOptions } from "hookledger";
import { problemsOf } from "../helpers/config.js";

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
  assert.equal(config.worker.batchSize, 50);
  assert.equal(config.worker.batchBudgetMs, 1000);
  assert.equal(config.embeddedPort, 54329);
});

test("resolveConfig refuses a worker batchSize over 64, naming the field and the reason", () => {
  const problems = problemsOf(
    { sources: [{ name: "stripe", provider: "stripe", secrets: ["inline"] }], worker: { batchSize: 65 } },
    { DATABASE_URL: "postgres://x/y" },
  );
  assert.deepEqual(problems, [
    "worker.batchSize: at most 64 (Postgres caches 64 subtransactions per transaction), got 65",
  ]);
});

const paddleHeader = (secret: string, ts: number, body: string) =>
  `ts=${ts};h1=${createHmac("sha256", secret).update(`${ts}:${body}`).digest("hex")}`;

function verifyPaddle(config: ReturnType<typeof resolveConfig>, ageSeconds: number) {
  const body = JSON.stringify({ event_id: "evt_1", event_type: "transaction.paid" });
  const now = Date.UTC(2026, 0, 1);
  const source = config.sources[0];
  assert.ok(source);
  const headers = new Headers({
    "paddle-signature": paddleHeader("pdl_secret", now / 1000 - ageSeconds, body),
  });
  return source.provider.verify({
    body: new TextEncoder().encode(body),
    headers,
    secrets: source.secrets,
    now,
  });
}

test("resolveConfig gives paddle its own 5 s window by default and honours toleranceSeconds", () => {
  const paddle = { name: "paddle", provider: "paddle", secrets: ["pdl_secret"] } as const;
  const byDefault = resolveConfig({ sources: [paddle] }, {});
  assert.equal(verifyPaddle(byDefault, 5).ok, true);
  assert.equal(verifyPaddle(byDefault, 6).ok, false);
  const wider = resolveConfig({ sources: [{ ...paddle, toleranceSeconds: 60 }] }, {});
  assert.equal(verifyPaddle(wider, 59).ok, true);
});

test("resolveConfig keeps 300 s for stripe when toleranceSeconds is unset", () => {
  const config = resolveConfig({ sources: [{ name: "s", provider: "stripe", secrets: ["whsec_x"] }] }, {});
  const body = JSON.stringify({ id: "evt_1", type: "ping" });
  const now = Date.UTC(2026, 0, 1);
  const at = (age: number) => {
    const t = now / 1000 - age;
    const v1 = createHmac("sha256", "whsec_x").update(`${t}.${body}`).digest("hex");
    const headers = new Headers({ "stripe-signature": `t=${t},v1=${v1}` });
    const source = config.sources[0];
    assert.ok(source);
    return source.provider.verify({
      body: new TextEncoder().encode(body),
      headers,
      secrets: source.secrets,
      now,
    });
  };
  assert.equal(at(300).ok, true);
  assert.equal(at(301).ok, false);
});

test("resolveConfig accepts shopify, paddle, slack and generic sources and has no warnings for them", () => {
  const config = resolveConfig(
    {
      sources: [
        { name: "shop", provider: "shopify", secrets: ["a"] },
        { name: "paddle", provider: "paddle", secrets: ["b"] },
        { name: "slack", provider: "slack", secrets: ["c"] },
        {
          name: "acme",
          provider: "generic",
          secrets: ["d"],
          generic: {
            signatureHeader: "x-sig",
            algorithm: "sha256",
            encoding: "hex",
            idPointer: "/id",
            typePointer: "/type",
          },
        },
      ],
    },
    {},
  );
  assert.deepEqual(
    config.sources.map((s) => s.provider.name),
    ["shopify", "paddle", "slack", "generic"],
  );
  assert.deepEqual(config.warnings, []);
});

test("resolveConfig refuses a generic source without options, and generic options on another provider", () => {
  const problems = problemsOf({
    sources: [
      { name: "acme", provider: "generic", secrets: ["s"] },
      { name: "shop", provider: "shopify", secrets: ["s"], generic: GENERIC },
    ],
  });
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0] ?? "", /^sources\[0\]\.generic: the generic provider needs its options, e\.g\./);
  assert.match(problems[1] ?? "", /^sources\[1\]\.generic: only a source with provider "generic"/);
});

const GENERIC: GenericOptions = {
  signatureHeader: "x-sig",
  algorithm: "sha256",
  encoding: "hex",
  idPointer: "/id",
  typePointer: "/type",
};

const genericProblems = (generic: Partial<GenericOptions> & Record<string, unknown>) =>
  problemsOf({
    sources: [{ name: "acme", provider: "generic", secrets: ["s"], generic: generic as GenericOptions }],
  });

test("resolveConfig names each unusable generic option and its fix", () => {
  const { idPointer: _, ...noIdStrategy } = GENERIC;
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...GENERIC, signatureHeader: "bad header" }, /\.generic\.signatureHeader: set a header name/],
    [{ ...GENERIC, algorithm: "md5" }, /\.generic\.algorithm: use "sha256" or "sha512"/],
    [{ ...GENERIC, encoding: "base32" }, /\.generic\.encoding: use "hex" or "base64"/],
    [{ ...GENERIC, idPointer: "id" }, /\.generic\.idPointer: use a JSON pointer such as "\/data\/id"/],
    [{ ...GENERIC, idHeader: "x-id" }, /\.generic: configure exactly one id strategy/],
    [noIdStrategy, /\.generic: configure exactly one id strategy/],
    [{ ...GENERIC, typeHeader: "x-type" }, /exactly one of typeHeader or typePointer/],
    [
      { ...GENERIC, signedTemplate: "{body}{body}" },
      /\.generic\.signedTemplate: it must contain \{body\} exactly once/,
    ],
    [
      { ...GENERIC, signedTemplate: "{ts}.{body}" },
      /\.generic\.signedTemplate: unknown placeholder "\{ts\}"/,
    ],
    [{ ...GENERIC, signedTemplate: "{timestamp}.{body}" }, /\{timestamp\} needs timestampHeader/],
    [{ ...GENERIC, timestampHeader: "x-ts", signedTemplate: "{body}" }, /add \{timestamp\}; an unsigned/],
    [{ ...GENERIC, toleranceSeconds: 0 }, /\.generic\.toleranceSeconds: expected a positive whole number/],
    [{ ...noIdStrategy, stableFields: [] }, /\.generic\.stableFields: list at least one JSON pointer/],
    [
      { ...GENERIC, entityIdPointer: "/data/id" },
      /an entity needs entityIdPointer, versionPointer and exactly one/,
    ],
  ];
  for (const [options, expected] of cases) {
    const problems = genericProblems(options);
    assert.equal(problems.length, 1, `${JSON.stringify(options)}\n${problems.join("\n")}`);
    assert.match(problems[0] ?? "", expected);
    assert.match(problems[0] ?? "", /^sources\[0\]\.generic/);
  }
});

test("resolveConfig names a misspelt generic option once, with the name it resembles", () => {
  assert.deepEqual(genericProblems({ ...GENERIC, idpointer: "/id" }), [
    "config.sources[0].generic.idpointer: unknown field; did you mean idPointer?",
  ]);
});

test("resolveConfig warns, without refusing, when a generic source dedupes by stableFields", () => {
  const { idPointer: _, ...rest } = GENERIC;
  const config = resolveConfig(
    {
      sources: [
        {
          name: "acme",
          provider: "generic",
          secrets: ["s"],
          generic: { ...rest, stableFields: ["/object/id", "/action"] },
        },
      ],
    },
    {},
  );
  assert.equal(config.warnings.length, 1);
  assert.match(
    config.warnings[0] ?? "",
    /^sources\[0\]\.generic\.stableFields: .*\/object\/id, \/action.*idHeader or idPointer/,
  );
});

test("resolveConfig refuses schedules it cannot run, naming the field and the fix", () => {
  const problems = problemsOf({
    sources: [
      { name: "stripe", provider: "stripe", secrets: ["whsec_x"] },
      { name: "gh", provider: "github", secrets: ["x"] },
    ],
    schedules: {
      prune: { olderThan: "7d", every: "soon", batchSize: 0, duty: 1.5 },
      reconcile: [
        { source: "gh", every: "15m", apiKey: env("HL_UNSET_STRIPE_KEY") },
        { source: "stripe", every: "15m", apiKey: "sk_test_x" },
      ],
    },
  });
  assert.ok(problems.some((p) => p.startsWith("schedules.prune.every") && p.includes("not a duration")));
  assert.ok(problems.some((p) => p.startsWith("schedules.prune.batchSize: 0 is not a whole number")));
  assert.ok(problems.some((p) => p.startsWith("schedules.prune.duty: 1.5 is not a share of time")));
  assert.ok(
    problems.some((p) =>
      /schedules\.prune\.olderThan: shorter than the 30-day replay window of source 'stripe'/.test(p),
    ),
  );
  assert.ok(
    problems.some(
      (p) => p.startsWith("schedules.reconcile[0].source") && p.includes("not a configured stripe source"),
    ),
  );
  assert.ok(
    problems.some((p) => p.startsWith("schedules.reconcile[0].apiKey") && p.includes("HL_UNSET_STRIPE_KEY")),
  );
  assert.ok(!problems.some((p) => p.startsWith("schedules.reconcile[1]")));
});

test("resolveConfig resolves schedules into milliseconds", () => {
  const config = resolveConfig(
    {
      sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
      schedules: {
        prune: { olderThan: "90d", every: "1h" },
        reconcile: [{ source: "stripe", every: "15m", apiKey: env("KEY") }],
      },
    },
    { KEY: "sk_test_x" },
  );
  assert.deepEqual(config.schedules.prune, {
    olderThanMs: 90 * 86_400_000,
    tombstonesOlderThanMs: 365 * 86_400_000,
    everyMs: 3_600_000,
    batchSize: 200,
    duty: 0.05,
    force: false,
  });
  assert.deepEqual(config.schedules.reconcile, [{ source: "stripe", everyMs: 900_000, apiKey: "sk_test_x" }]);
});
