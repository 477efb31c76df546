import { createPool, type Pool } from "../db/pool.js";
import type { PoolerMode } from "../db/pooler.js";
import { type LedgerContext, ledgerContext } from "../ledger/context.js";
import type { ResolvedConfig } from "../config/validate.js";
import { commandDatabaseUrl, loadConfig } from "./config.js";
import { CliError, databaseFailure } from "./errors.js";
import { checkPooler, PoolerMismatch } from "../db/pooler-check.js";

/** A one-off command's connection to the ledger. */
export interface CommandLedger {
  readonly config: ResolvedConfig;
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  readonly connectionString: string;
  close(): Promise<void>;
}

/**
 * Opens the ledger for a one-off command that verifies no delivery, so the webhook secrets need not be set: the
 * config (`--config`, else `./hookledger.config.mjs`, else the demo), then its database or the embedded server
 * `hookledger serve` started in this directory. A server it cannot reach is a one-line error naming it.
 *
 * @example
 * const db = await openLedger(values.config);
 * try { await db.pool.query(...) } finally { await db.close(); }
 */
export async function openLedger(configFile: string | undefined): Promise<CommandLedger> {
  const { config } = await loadConfig(configFile, { secrets: false });
  const connectionString = await commandDatabaseUrl(config);
  const pool = await connectPool(connectionString, 4, commandPooler(config));
  return { config, pool, ledger: ledgerContext(config.schema), connectionString, close: () => pool.end() };
}

/**
 * An admin pool on `connectionString` whose first connection is made now, so that a server out of reach (refused,
 * unknown host, wrong password, no such database, timeout) is a one-line `CliError` naming `host:port/database`.
 *
 * @example
 * const pool = await connectPool(await commandDatabaseUrl(config), 1);
 */
export async function connectPool(
  connectionString: string,
  max: number,
  pooler: PoolerMode = "none",
): Promise<Pool> {
  const pool = createPool({ connectionString, role: "admin", max, pooler });
  try {
    await checkPooler(pool, pooler);
    return pool;
  } catch (error) {
    await pool.end().catch(() => {});
    if (error instanceof PoolerMismatch) throw new CliError(error.message);
    throw databaseFailure(error, connectionString) ?? error;
  }
}

/**
 * The pooler a command's connection goes through: `database.pooler` (or `HOOKLEDGER_DATABASE_POOLER`) for the
 * configured database, none for the embedded server.
 *
 * @example
 * const pool = await connectPool(await commandDatabaseUrl(config), 1, commandPooler(config));
 */
export function commandPooler(config: ResolvedConfig): PoolerMode {
  return config.databaseUrl === undefined ? "none" : config.pooler.pooler;
}
