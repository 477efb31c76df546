import type { LedgerContext } from "../ledger/context.js";

// SQLSTATEs a claim meets when the ledger's tables are missing: undefined_table, invalid_schema_name.
const NOT_MIGRATED = new Set(["42P01", "3F000"]);

/**
 * The log message for a claim that failed: when the ledger was never migrated it names the command that fixes it,
 * since a 503 alone would send the provider into retries that can never succeed until someone looks.
 *
 * @example
 * log.error({ err: error.message }, claimFailureMessage(error, ledger));
 */
export function claimFailureMessage(error: unknown, ledger: LedgerContext): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "string" && NOT_MIGRATED.has(code)) {
    return (
      `the ledger schema "${ledger.schema}" is not migrated: run \`npx hookledger migrate\` (or call ` +
      "hl.migrate() / migrate(pool, schema) at start); answering 503 so the provider retries"
    );
  }
  return "claim failed; answering 503 so the provider retries";
}
