import { randomBytes } from "node:crypto";
import { migrate } from "hookledger";
import { createPool, type Pool, type PoolClient, type PoolRole } from "hookledger";
import { type LedgerContext, ledgerContext } from "hookledger";

/**
 * The database the DB suites run against: the system PostgreSQL 15 by default; `scripts/test.mjs` runs them a
 * second time against the embedded server by setting HOOKLEDGER_TEST_DATABASE_URL.
 */
export function testDatabaseUrl(): string {
  return process.env.HOOKLEDGER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
}

/** A migrated ledger in a schema of its own, so test files run in parallel without meeting. */
export interface TestLedger {
  readonly url: string;
  readonly schema: string;
  readonly ledger: LedgerContext;
  /** An admin pool for assertions and setup. */
  readonly pool: Pool;
  /** Creates another pool of the given role (closed by `drop`). */
  newPool(role: PoolRole, max?: number): Pool;
  /** Drops the schema and closes every pool. */
  drop(): Promise<void>;
}

/**
 * Creates a fresh, migrated ledger schema.
 *
 * @example
 * const t = await freshLedger(); after(() => t.drop());
 */
export async function freshLedger(): Promise<TestLedger> {
  const url = testDatabaseUrl();
  const schema = `t_${randomBytes(5).toString("hex")}`;
  const pool = createPool({ connectionString: url, role: "admin", max: 4 });
  await migrate(pool, schema);
  const pools: Pool[] = [];
  return {
    url,
    schema,
    ledger: ledgerContext(schema),
    pool,
    newPool(role, max) {
      // Generous timeouts: these pools serve tests of behaviour, not of deadlines, on a shared and noisy machine
      // (the deadline tests build their own pools with the defaults).
      const p = createPool({
        connectionString: url,
        role,
        connectTimeoutMs: 10_000,
        statementTimeoutMs: 30_000,
        ...(max !== undefined && { max }),
      });
      pools.push(p);
      return p;
    },
    async drop() {
      await Promise.all(pools.map((p) => p.end().catch(() => {})));
      await pool.query(`drop schema if exists "${schema}" cascade`);
      await pool.end();
    },
  };
}

/** Polls `check` until it returns true or `timeoutMs` passes; throws with `what` on timeout. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Runs `fn` on a client of the ledger's admin pool and releases it (for calls that run their own transaction). */
export async function onClient<T>(ledger: TestLedger, fn: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await ledger.pool.connect();
  try {
    return await fn(client);
  } finally {
    client.release();
  }
}

/**
 * Collects the plan of every statement `client` runs from now on (auto_explain at notice level hands each one to the
 * client). The session keeps the settings: release the client with `release(true)`.
 */
export async function recordPlans(client: PoolClient): Promise<string[]> {
  await client.query("load 'auto_explain'");
  await client.query("set auto_explain.log_min_duration = 0");
  await client.query("set auto_explain.log_level = notice");
  const plans: string[] = [];
  client.on("notice", (notice) => plans.push(notice.message ?? ""));
  return plans;
}
