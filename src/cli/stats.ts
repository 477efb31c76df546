import { durationMs } from "../config/duration.js";
import { ledgerContext } from "../ledger/context.js";
import { formatStatsJson, formatStatsTable } from "../stats/format.js";
import { readLedgerStats } from "../stats/ledger.js";
import { readDeliveryStats } from "../stats/query.js";
import { commandDatabaseUrl, loadConfig } from "./config.js";
import { connectPool } from "./database.js";
import { CliError } from "./errors.js";

/**
 * Options of `hookledger stats`.
 *
 * @example
 * const options: StatsCommandOptions = { since: "7d", source: "stripe", json: true };
 */
export interface StatsCommandOptions {
  /** `--config FILE`. */
  readonly config?: string | undefined;
  /** `--since`: how far back, e.g. `90m`, `24h`, `7d`. @defaultValue "24h" */
  readonly since?: string | undefined;
  /** `--source`: one source only. */
  readonly source?: string | undefined;
  /** `--json`: machine-readable output. */
  readonly json?: boolean | undefined;
}

/**
 * Parses a window length: a whole number and a unit (`s`, `m`, `h`, `d`, `w`). Anything else is a usage error
 * naming the flag and the expected form.
 *
 * @example
 * parseDuration("90m"); // 5_400_000
 */
export function parseDuration(text: string, flag = "--since"): number {
  const ms = durationMs(text);
  if (ms === undefined) {
    throw new CliError(
      `${flag} '${text}' is not a duration; give a positive whole number and a unit (s, m, h, d, w), e.g. 90m, 24h or 7d`,
      2,
    );
  }
  return ms;
}

/**
 * `hookledger stats`: per source over the window, deliveries, unique events, duplicates and the duplicate rate,
 * shadow-mode would-skips, retries, body mismatches and refusals, read from the ledger's `delivery_stats` (so they
 * outlive restarts and add up across hosts); then, from the events table, the backlog and its oldest event's age
 * now, and failed and dead events and p50/p99 time from receipt to settle of the events received in the window.
 *
 * @example
 * await statsCommand({ since: "24h", source: "stripe" }, (text) => process.stdout.write(text));
 */
export async function statsCommand(options: StatsCommandOptions, out: (text: string) => void): Promise<void> {
  const window = options.since ?? "24h";
  const windowMs = parseDuration(window);
  const { config } = await loadConfig(options.config, { secrets: false });
  const pool = await connectPool(await commandDatabaseUrl(config), 1);
  try {
    const ledger = ledgerContext(config.schema);
    const query = { windowMs, ...(options.source !== undefined && { source: options.source }) };
    const [stats, events] = await Promise.all([
      readDeliveryStats(pool, ledger, query),
      readLedgerStats(pool, ledger, query),
    ]).catch((error: Error & { code?: string }) => {
      // undefined table, column or schema: a ledger that is missing or older than delivery statistics.
      if (error.code === "42P01" || error.code === "42703" || error.code === "3F000") {
        throw new CliError(
          `schema '${config.schema}' has no current ledger (${error.message}); run \`hookledger migrate\` first, or set HOOKLEDGER_SCHEMA to the ledger's schema`,
        );
      }
      throw new CliError(`could not read delivery statistics: ${error.message}; check DATABASE_URL`);
    });
    out(options.json ? formatStatsJson(stats, window, events) : formatStatsTable(stats, window, events));
  } finally {
    await pool.end();
  }
}
