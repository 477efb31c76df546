import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ConfigError,
  createHookledger,
  env,
  Handlers,
  type HookledgerConfig,
  Outbox,
  resolveConfig,
} from "hookledger";
import { problemsOf } from "../helpers/config.js";

const STANDARD_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

// Every field the configuration types define, at every depth (generic's exclusive choices take one side each).
const FULL = {
  database: { url: "postgres://127.0.0.1:5432/app", schema: "ledger", embeddedPort: 54330 },
  host: "0.0.0.0",
  port: env("HL_FULL_PORT"),
  admin: { port: 9464, host: env.optional("HL_FULL_ADMIN_HOST") },
  dashboard: { users: [{ name: "alice", token: "0123456789abcdef0123" }], enabled: true },
  trustProxy: false,
  sources: [
    {
      name: "stripe",
      provider: "stripe",
      secrets: [env("HL_FULL_STRIPE"), env.optional("HL_FULL_STRIPE_OLD")],
      toleranceSeconds: 300,
      maxBodyBytes: 1_048_576,
    },
    {
      name: "aw",
      provider: "awardee",
      secrets: ["aw-secret"],
      awardee: {
        signatureHeader: "x-sig",
        algorithm: "sha512",
        encoding: "base64",
        prefix: "sha512=",
        timestampHeader: "x-ts",
        toleranceSeconds: 60,
        versionField: "updated_at",
        entityType: "award",
        entityIdField: "awardee_id",
      },
    },
    {
      name: "acme",
      provider: "generic",
      secrets: ["acme-secret"],
      generic: {
        signatureHeader: "x-sig",
        algorithm: "sha256",
        encoding: "hex",
        prefix: "sha256=",
        timestampHeader: "x-ts",
        signedTemplate: "{timestamp}.{body}",
        toleranceSeconds: 60,
        idPointer: "/id",
        typePointer: "/type",
        versionPointer: "/data/updated_at",
        entityType: "order",
        entityIdPointer: "/data/id",
      },
    },
    { name: "std", provider: "standard", secrets: [STANDARD_SECRET] },
  ],
  replayToken: env("HL_FULL_REPLAY"),
  schedules: {
    prune: {
      olderThan: "90d",
      tombstonesOlderThan: "400d",
      every: "1h",
      batchSize: 500,
      duty: 0.1,
      force: false,
    },
    reconcile: [{ source: "stripe", every: "15m", since: "2h", apiKey: "sk_test_x" }],
  },
  alerts: {
    every: "1m",
    slack: "https://hooks.slack.com/services/T/B/X",
    webhooks: [{ url: "https://ops.example.com/hooks", secret: STANDARD_SECRET }],
    rules: {
      deadLetters: { atLeast: 2 },
      backlogAge: { over: "10m" },
      failureRate: { over: 0.2, window: "15m", minEvents: 10 },
      signatureFailures: { perMinute: 50, window: "10m" },
      bodyMismatches: { atLeast: 3, window: "1h" },
      unhandled: false,
    },
  },
  handlers: new Handlers().on("stripe", "invoice.paid", () => {}),
  outbox: new Outbox().on("email", () => {}),
  worker: {
    enabled: true,
    concurrency: 4,
    pollIntervalMs: 1000,
    handlerTimeoutMs: 30_000,
    batchSize: 50,
    batchBudgetMs: 1000,
    retry: { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 3_600_000 },
    shutdownGraceMs: 10_000,
  },
} satisfies Required<HookledgerConfig>;

const FULL_ENV = { HL_FULL_PORT: "8080", HL_FULL_STRIPE: "whsec_x", HL_FULL_REPLAY: "replay-token" };

test("resolveConfig accepts a configuration with every field it defines, at every depth", () => {
  const config = resolveConfig(FULL, FULL_ENV);
  assert.deepEqual(config.warnings, []);
  assert.equal(config.port, 8080);
  assert.equal(config.sources.length, 4);
});

// biome-ignore lint/suspicious/noExplicitAny: each row writes a misspelt field somewhere into a copy of FULL
type Loose = any;

// One misspelt field at each depth; the configuration is otherwise the full one, so it is the only problem.
const AT_EACH_DEPTH: [string, (c: Loose) => void, string][] = [
  ["top level", (c) => (c.workr = { concurrency: 4 }), "config.workr: unknown field; did you mean worker?"],
  [
    "database",
    (c) => (c.database.schmea = "x"),
    "config.database.schmea: unknown field; did you mean schema?",
  ],
  ["admin", (c) => (c.admin.prot = 1), "config.admin.prot: unknown field; did you mean port?"],
  [
    "an env(…)",
    (c) => (c.port = { env: "HL_FULL_PORT", optinal: true }),
    "config.port.optinal: unknown field; did you mean optional?",
  ],
  [
    "worker",
    (c) => (c.worker.concurency = 2),
    "config.worker.concurency: unknown field; did you mean concurrency?",
  ],
  [
    "worker.retry",
    (c) => (c.worker.retry.maxAttempt = 2),
    "config.worker.retry.maxAttempt: unknown field; did you mean maxAttempts?",
  ],
  [
    "sources[i]",
    (c) => (c.sources[0].maxBodyByts = 10),
    "config.sources[0].maxBodyByts: unknown field; did you mean maxBodyBytes?",
  ],
  [
    "a source's secret",
    (c) => (c.sources[0].secrets[1].optionl = true),
    "config.sources[0].secrets[1].optionl: unknown field; did you mean optional?",
  ],
  [
    "awardee options",
    (c) => (c.sources[1].awardee.versionFeild = "v"),
    "config.sources[1].awardee.versionFeild: unknown field; did you mean versionField?",
  ],
  [
    "generic options",
    (c) => (c.sources[2].generic.typPointer = "/t"),
    "config.sources[2].generic.typPointer: unknown field; did you mean typePointer?",
  ],
  [
    "dashboard",
    (c) => (c.dashboard.enabld = true),
    "config.dashboard.enabld: unknown field; did you mean enabled?",
  ],
  [
    "dashboard.users[i]",
    (c) => (c.dashboard.users[0].tokn = "x"),
    "config.dashboard.users[0].tokn: unknown field; did you mean token?",
  ],
  [
    "schedules",
    (c) => (c.schedules.prnue = {}),
    "config.schedules.prnue: unknown field; did you mean prune?",
  ],
  [
    "schedules.prune",
    (c) => (c.schedules.prune.dutty = 1),
    "config.schedules.prune.dutty: unknown field; did you mean duty?",
  ],
  [
    "schedules.reconcile[i]",
    (c) => (c.schedules.reconcile[0].sinc = "1h"),
    "config.schedules.reconcile[0].sinc: unknown field; did you mean since?",
  ],
  ["alerts", (c) => (c.alerts.evrey = "1m"), "config.alerts.evrey: unknown field; did you mean every?"],
  [
    "alerts.webhooks[i]",
    (c) => (c.alerts.webhooks[0].secrt = "x"),
    "config.alerts.webhooks[0].secrt: unknown field; did you mean secret?",
  ],
  [
    "alerts.rules",
    (c) => (c.alerts.rules.backlogAg = {}),
    "config.alerts.rules.backlogAg: unknown field; did you mean backlogAge?",
  ],
  [
    "an alert rule",
    (c) => (c.alerts.rules.failureRate.windw = "1h"),
    "config.alerts.rules.failureRate.windw: unknown field; did you mean window?",
  ],
];

for (const [depth, misspell, expected] of AT_EACH_DEPTH) {
  test(`resolveConfig refuses an unknown field in ${depth}, naming its path and the closest name`, () => {
    const config = structuredClone({ ...FULL, handlers: undefined, outbox: undefined });
    misspell(config);
    assert.deepEqual(problemsOf({ ...config, handlers: FULL.handlers, outbox: FULL.outbox }, FULL_ENV), [
      expected,
    ]);
  });
}

test("resolveConfig lists the known fields when no name is close to the unknown one", () => {
  const problems = problemsOf({ ...FULL, workr2x: 1 } as HookledgerConfig, FULL_ENV);
  assert.deepEqual(problems, [
    "config.workr2x: unknown field; known fields: database, host, port, admin, dashboard, trustProxy, sources, replayToken, schedules, alerts, handlers, outbox, worker",
  ]);
  assert.deepEqual(problemsOf({ ...FULL, "max body": 1 } as HookledgerConfig, FULL_ENV), [
    'config["max body"]: unknown field; known fields: database, host, port, admin, dashboard, trustProxy, sources, replayToken, schedules, alerts, handlers, outbox, worker',
  ]);
});

test("resolveConfig suggests a name whatever its case, and swapped letters count as one edit", () => {
  const source = {
    name: "s",
    provider: "stripe",
    secrets: ["whsec_x"],
    MaxBodyBytes: 1,
    toleranecSeconds: 1,
  };
  assert.deepEqual(problemsOf({ sources: [source] } as HookledgerConfig), [
    "config.sources[0].MaxBodyBytes: unknown field; did you mean maxBodyBytes?",
    "config.sources[0].toleranecSeconds: unknown field; did you mean toleranceSeconds?",
  ]);
});

test("resolveConfig lists every unknown field with the other problems, the unknown ones first", () => {
  const problems = problemsOf({
    sources: [{ name: "stripe", provider: "stripe", secrets: [env("HL_UNSET_SECRET")], relayTo: {} }],
    worker: { concurrency: 0, retyr: {} },
    shedules: {},
  } as unknown as HookledgerConfig);
  assert.deepEqual(problems, [
    "config.sources[0].relayTo: unknown field; known fields: name, provider, secrets, toleranceSeconds, maxBodyBytes, awardee, generic, forward",
    "config.worker.retyr: unknown field; did you mean retry?",
    "config.shedules: unknown field; did you mean schedules?",
    "sources[0].secrets[0]: the secret of source 'stripe' is empty; set the environment variable HL_UNSET_SECRET",
    "worker.concurrency: expected a positive whole number, got 0",
  ]);
});

test("resolveConfig does not look into handlers, or into values that are not plain objects", () => {
  const handlers = new Handlers().on("stripe", "invoice.paid", () => {});
  const config = resolveConfig(
    { sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }], handlers, host: "0.0.0.0" },
    {},
  );
  assert.equal(config.handlers, handlers);
});

const SOURCES = [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }] as const;
const DATABASE = "postgres://127.0.0.1:9/none";

function refusalOf(options: Record<string, unknown>): readonly string[] {
  try {
    createHookledger(options as unknown as Parameters<typeof createHookledger>[0]);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.problems;
  }
  assert.fail("expected a ConfigError");
}

test("createHookledger refuses an unknown option at the top level and nested, naming each path", () => {
  assert.deepEqual(refusalOf({ connectionString: DATABASE, sources: SOURCES, workr: {} }), [
    "options.workr: unknown field; did you mean worker?",
  ]);
  const problems = refusalOf({
    connectionString: DATABASE,
    sources: [{ ...SOURCES[0], maxBodyByts: 10 }],
    worker: { concurency: 2, retry: { baseDelay: 5 } },
    failureLimit: { maxFailure: 3 },
    nonsense: true,
  });
  assert.deepEqual(problems, [
    "options.sources[0].maxBodyByts: unknown field; did you mean maxBodyBytes?",
    "options.worker.concurency: unknown field; did you mean concurrency?",
    "options.worker.retry.baseDelay: unknown field; did you mean baseDelayMs?",
    "options.failureLimit.maxFailure: unknown field; did you mean maxFailures?",
    "options.nonsense: unknown field; known fields: connectionString, pool, pooler, directUrl, sources, handlers, outbox, schema, worker, mode, log, replayToken, seen, failureLimit, trustProxy, observer",
  ]);
});

test("createHookledger names a misspelt connectionString instead of asking for one", () => {
  assert.deepEqual(refusalOf({ connectionstring: DATABASE, sources: SOURCES }), [
    "options.connectionstring: unknown field; did you mean connectionString?",
  ]);
});
