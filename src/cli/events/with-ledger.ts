import { type CommandLedger, openLedger } from "../database.js";
import { CliError } from "../errors.js";

/**
 * Opens the ledger for one command, runs `fn` and closes it; a schema that is missing or not migrated becomes a
 * CLI error that says to run `hookledger migrate` or to set HOOKLEDGER_SCHEMA.
 *
 * @example
 * const events = await withLedger(values.config, (db) => listEvents(db.pool, db.ledger, filter));
 */
export async function withLedger<T>(
  config: string | undefined,
  fn: (db: CommandLedger) => Promise<T>,
): Promise<T> {
  const db = await openLedger(config);
  try {
    return await fn(db).catch((error: Error & { code?: string }) => {
      // Undefined table, column or schema: a ledger that is missing or older than this command.
      if (error.code === "42P01" || error.code === "42703" || error.code === "3F000") {
        throw new CliError(
          `schema '${db.ledger.schema}' has no current ledger (${error.message}); run \`hookledger migrate\` first, or set HOOKLEDGER_SCHEMA to the ledger's schema`,
        );
      }
      throw error;
    });
  } finally {
    await db.close();
  }
}
