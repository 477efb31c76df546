import { createPool, type Pool } from "../db/pool.js";
import { type LedgerContext, ledgerContext } from "../ledger/context.js";
import type { ResolvedConfig } from "../config/validate.js";
import { commandDatabaseUrl, loadConfig } from "./config.js";

/** A one-off command's connection to the ledger. */
export interface CommandLedger {
  readonly config: ResolvedConfig;
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  readonly connectionString: string;
  close(): Promise<void>;
}

/**
 * Opens the ledger for a one-off command: the config (`--config`, else `./hookledger.config.mjs`, else the demo),
 * then DATABASE_URL or the embedded server `hookledger serve` started in this directory.
 *
 * @example
 * const db = await openLedger(values.config);
 * try { await db.pool.query(...) } finally { await db.close(); }
 */
export async function openLedger(configFile: string | undefined): Promise<CommandLedger> {
  const { config } = await loadConfig(configFile);
  const connectionString = await commandDatabaseUrl(config);
  const pool = createPool({ connectionString, role: "admin", max: 4 });
  return { config, pool, ledger: ledgerContext(config.schema), connectionString, close: () => pool.end() };
}
