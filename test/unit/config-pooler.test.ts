// database.pooler and database.directUrl (docs/operations.md, "Behind PgBouncer"), as resolveConfig reads them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { type HookledgerConfig, resolveConfig } from "hookledger";
import { problemsOf } from "../helpers/config.js";

const base = {
  database: { url: "postgres://app@pgbouncer:6432/shop" },
  sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
} satisfies HookledgerConfig;
const prune = { prune: { olderThan: "90d", every: "1h" } } as const;

test('resolveConfig reads database.pooler "transaction" and DATABASE_DIRECT_URL', () => {
  const config = resolveConfig(
    { ...base, database: { ...base.database, pooler: "transaction" } },
    { DATABASE_DIRECT_URL: "postgres://app@db:5432/shop" },
  );
  assert.deepEqual(config.pooler, { pooler: "transaction", directUrl: "postgres://app@db:5432/shop" });
});

test("resolveConfig without database.pooler connects directly", () => {
  assert.deepEqual(resolveConfig(base, {}).pooler, { pooler: "none", directUrl: undefined });
});

test("resolveConfig lets HOOKLEDGER_DATABASE_POOLER beat database.pooler", () => {
  const config = resolveConfig(
    { ...base, database: { ...base.database, pooler: "none" } },
    { HOOKLEDGER_DATABASE_POOLER: "transaction" },
  );
  assert.equal(config.pooler.pooler, "transaction");
});

test("resolveConfig refuses a pooler mode it does not know, naming the two it does", () => {
  assert.deepEqual(problemsOf(base, { HOOKLEDGER_DATABASE_POOLER: "session" }), [
    'HOOKLEDGER_DATABASE_POOLER: expected "none" or "transaction", got "session"',
  ]);
});

test("resolveConfig refuses a scheduled prune behind a transaction pooler without a direct URL", () => {
  const problems = problemsOf(
    { ...base, database: { ...base.database, pooler: "transaction" }, schedules: prune },
    {},
  );
  assert.equal(problems.length, 1);
  assert.match(
    problems[0] ?? "",
    /^schedules\.prune: .*needs database\.directUrl \(or DATABASE_DIRECT_URL\)/,
  );
});

test("resolveConfig takes a scheduled prune behind a transaction pooler with a direct URL", () => {
  const config = resolveConfig(
    {
      ...base,
      database: { ...base.database, pooler: "transaction", directUrl: "postgres://app@db:5432/shop" },
      schedules: prune,
    },
    {},
  );
  assert.equal(config.pooler.directUrl, "postgres://app@db:5432/shop");
});
