import { join } from "node:path";
import { startEmbeddedPostgres } from "../../db/embedded.js";
import { migrate } from "../../db/migrate.js";
import type { Pool } from "../../db/pool.js";
import { createLogger } from "../../log.js";
import { loadConfig } from "../config.js";
import { commandPooler, connectPool } from "../database.js";
import { parseOptions } from "../options.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger migrate [--config FILE]

Applies the ledger's migrations (numbered, forward-only, under an advisory lock) to the schema HOOKLEDGER_SCHEMA
(default: hookledger) and exits. serve and worker also migrate at start; run this first when the service's
database role may not change the schema (and start them with --no-migrate). Without DATABASE_URL it migrates the embedded Postgres in ./.hookledger.

Options:
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the built-in demo)
  -h, --help      show this help

Environment: DATABASE_URL, HOOKLEDGER_SCHEMA

Examples:
  DATABASE_URL=postgres://… hookledger migrate
  HOOKLEDGER_SCHEMA=webhooks hookledger migrate --config ./hookledger.config.mjs
`;

/**
 * `hookledger migrate`: prints the migrations applied, or that they are current.
 *
 * @example
 * await command.run([], io); // "migrations are current"
 */
export const command: Command = {
  summary: "apply the ledger's migrations and exit",
  async run(args, io) {
    const { values } = parseOptions("migrate", args, {
      config: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    const { config } = await loadConfig(values.config, { secrets: false });
    const embedded = config.databaseUrl
      ? undefined
      : await startEmbeddedPostgres({
          dataDir: join(".hookledger", "pg"),
          port: config.embeddedPort,
          log: createLogger(),
        });
    let pool: Pool;
    try {
      pool = await connectPool(
        config.databaseUrl ?? embedded?.connectionString ?? "",
        1,
        commandPooler(config),
      );
    } catch (error) {
      await embedded?.stop();
      throw error;
    }
    try {
      const applied = await migrate(pool, config.schema);
      io.out(applied.length > 0 ? `applied ${applied.join(", ")}\n` : "migrations are current\n");
    } finally {
      await pool.end();
      await embedded?.stop();
    }
    return 0;
  },
};
