import { isHookledgerPool, type Pool, SESSION_MARK, withTransaction } from "./pool.js";
import type { PoolerMode } from "./pooler.js";

const FIX = `set database.pooler to "transaction" (or HOOKLEDGER_DATABASE_POOLER=transaction; docs/operations.md, "Behind PgBouncer")`;

/**
 * The database is reached in a way hookledger's pools are not set for: a pooler it was not told about, or one in a
 * mode it cannot work with. The message names what is off and the fix; a start refuses rather than run with the
 * claim's settings silently dropped.
 *
 * @example
 * if (error instanceof PoolerMismatch) console.error(error.message);
 */
export class PoolerMismatch extends Error {
  /** Stable, for a caller that tells failures apart. */
  readonly code = "pooler_mismatch";
}

/**
 * Checks at start that the sessions of `pool` have what the claim and the worker rest on, through whatever stands
 * in front of Postgres. With `pooler: "none"`, on a pool made by `createPool`, the settings sent at connect must be
 * in effect: PgBouncer refuses the `options` startup parameter (`unsupported startup parameter: options`), and
 * with `options` in its `ignore_startup_parameters` it drops them without a word. With `"transaction"`, a
 * transaction must work and carry `synchronous_commit = on`: PgBouncer's statement mode refuses transactions.
 * Resolves when all is well; rejects with a {@link PoolerMismatch} naming the fix, or with the database's own
 * failure (a transient one is for the caller's wait).
 *
 * @example
 * await checkPooler(admin, "transaction");
 */
export async function checkPooler(pool: Pool, pooler: PoolerMode): Promise<void> {
  try {
    if (pooler === "none") {
      if (!isHookledgerPool(pool)) return;
      const { rows } = await pool.query<{ mark: string | null }>(
        "select current_setting($1::text, true) as mark",
        [SESSION_MARK],
      );
      if (rows[0]?.mark !== "on") {
        throw new PoolerMismatch(
          `the session settings hookledger sends at connect are not in effect (a pooler with "options" in its ignore_startup_parameters drops them): ${FIX}`,
        );
      }
      return;
    }
    const sync = await withTransaction(pool, async (tx) => {
      const { rows } = await tx.query<{ sync: string }>(
        "select current_setting('synchronous_commit') as sync",
      );
      return rows[0]?.sync;
    });
    if (sync !== "on") {
      throw new PoolerMismatch(
        `synchronous_commit is ${sync} inside hookledger's transactions behind the pooler; a 200 must follow a durable commit: check that the pooler passes SET LOCAL through (docs/operations.md, "Behind PgBouncer")`,
      );
    }
  } catch (error) {
    if (error instanceof PoolerMismatch) throw error;
    const message = error instanceof Error ? error.message : "";
    if (/unsupported startup parameter/i.test(message)) {
      throw new PoolerMismatch(
        `the database refused the session settings hookledger sends at connect (${message}), as a pooler in front of Postgres does: ${FIX}`,
        { cause: error },
      );
    }
    if (/statement pooling mode/i.test(message)) {
      throw new PoolerMismatch(
        `the pooler in front of Postgres runs in statement mode (${message}); hookledger needs transactions: set its pool_mode to transaction or session`,
        { cause: error },
      );
    }
    throw error;
  }
}
