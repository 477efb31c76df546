import { ledgerContext } from "../../ledger/context.js";
import { formatStatsJson, formatStatsTable } from "../../stats/format.js";
import { readLedgerStats } from "../../stats/ledger.js";
import { readDeliveryStats } from "../../stats/query.js";
import { commandDatabaseUrl, loadConfig } from "../config.js";
import { commandPooler, connectPool } from "../database.js";
import { CliError } from "../errors.js";
import { durationOption, parseOptions } from "../options.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger stats [--since DUR] [--source NAME] [--json] [--config FILE]

Per source over the window: deliveries, unique events, duplicates and the duplicate rate, shadow-mode
would-skips, retries, body mismatches and refusals (from the ledger's delivery statistics, so they outlive
restarts and add up across hosts); then the backlog and its oldest event's age now, and the failed and dead
events and p50/p99 time from receipt to settle of the events received in the window.

Options:
  --since DUR     the window, a duration back from now, e.g. 90m, 24h, 7d (default: 24h)
  --source NAME   one source only
  --json          print JSON instead of a table
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the built-in demo)
  -h, --help      show this help

Environment: DATABASE_URL, HOOKLEDGER_SCHEMA

Examples:
  hookledger stats
  hookledger stats --since 7d --source stripe
  hookledger stats --since 90m --json
`;

/**
 * `hookledger stats`: the delivery and ledger statistics of a window, as a table or JSON.
 *
 * @example
 * await command.run(["--since", "24h", "--source", "stripe"], io);
 */
export const command: Command = {
  summary: "deliveries, duplicate rate, would-skip, refusals; backlog, failures, dead, time to settle",
  async run(args, io) {
    const { values } = parseOptions("stats", args, {
      since: { type: "string" },
      source: { type: "string" },
      json: { type: "boolean" },
      config: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    const window = values.since ?? "24h";
    const windowMs = durationOption("--since", window);
    const { config } = await loadConfig(values.config, { secrets: false });
    const pool = await connectPool(await commandDatabaseUrl(config), 1, commandPooler(config));
    try {
      const ledger = ledgerContext(config.schema);
      const query = { windowMs, ...(values.source !== undefined && { source: values.source }) };
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
      io.out(values.json ? formatStatsJson(stats, window, events) : formatStatsTable(stats, window, events));
    } finally {
      await pool.end();
    }
    return 0;
  },
};
