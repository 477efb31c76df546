#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { migrate } from "../db/migrate.js";
import { startEmbeddedPostgres } from "../db/embedded.js";
import { createPool } from "../db/pool.js";
import { createLogger } from "../log.js";
import { MissingPackageError } from "../optional.js";
import { startService } from "../service.js";
import { loadConfig } from "./config.js";
import type { Command } from "./commands/types.js";
import { CliError, explainDatabaseFailures } from "./errors.js";
import { statsCommand } from "./stats.js";

const HELP = `hookledger: exactly-once, in-order webhook processing on Postgres

Usage: hookledger <command> [options]

Commands:
  serve     receive webhooks on POST /webhooks/:source and run the worker
  worker    run only the worker (any number of them may share one database)
  migrate   apply the ledger's migrations and exit
  send      sign and post the demo's events, or JSON files as any source, to a running service
  stats     deliveries, duplicate rate, would-skip, refusals; backlog, failures, dead, time to settle
  events    list, show, retry and requeue events in the ledger
  replay    bring back missed events: replay stripe (events API), replay github (redeliveries)
  reconcile list the Stripe events the ledger lacks and claim them
  prune     delete settled events past a horizon, keeping tombstones of their keys

Run \`hookledger <command> --help\` for a command's options and examples.

Options:
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the built-in demo)
  --no-worker     serve: receive only, run workers elsewhere
  --url URL       send: the service's base URL (default: http://127.0.0.1:3000)
  --since DUR     stats: the window, e.g. 90m, 24h, 7d (default: 24h)
  --source NAME   stats: one source only
  --json          stats: print JSON instead of a table
  -h, --help      show this help
  -v, --version   print the version

Environment: DATABASE_URL, PORT, HOST, HOOKLEDGER_SCHEMA, HOOKLEDGER_MODE, HOOKLEDGER_REPLAY_TOKEN, REDIS_URL, LOG_LEVEL;
  METRICS_PORT (worker: serve /metrics, /healthz and /readyz on this port)

Examples:
  hookledger serve                          # the demo on an embedded Postgres
  DATABASE_URL=postgres://… hookledger serve --config ./hookledger.config.mjs
  hookledger worker --config ./hookledger.config.mjs
  hookledger send --url http://127.0.0.1:3000
  hookledger stats --since 24h --source stripe
  hookledger replay stripe --source stripe --since 2h
  hookledger events requeue --status dead --source stripe --yes
  hookledger prune --older-than 90d
`;

// Commands in their own modules (src/cli/commands/<name>.ts) parse their own arguments.
const MODULE_COMMANDS: readonly string[] = [
  "events",
  "prune",
  "replay",
  "reconcile",
  "backfill-versions",
  "send",
];

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first !== undefined && MODULE_COMMANDS.includes(first)) {
    const { command } = (await import(`./commands/${first}.js`)) as { command: Command };
    return command.run(rest, {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
      isTTY: process.stdout.isTTY === true,
    });
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new CliError(`${(error as Error).message}; see \`hookledger --help\``, 2);
  }
  const { values, positionals } = parsed;
  if (values.version) {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    process.stdout.write(`${pkg.version}\n`);
    return 0;
  }
  const command = positionals[0];
  if (values.help || command === undefined || command === "help") {
    process.stdout.write(HELP);
    return command === undefined && !values.help ? 2 : 0;
  }
  if (positionals.length > 1)
    throw new CliError(`unexpected argument '${positionals[1]}'; see \`hookledger --help\``, 2);
  const log = cliLogger();
  switch (command) {
    case "serve":
    case "worker": {
      const loaded = await loadConfig(values.config);
      for (const warning of loaded.config.warnings) log.warn({ config: loaded.file }, warning);
      if (!loaded.file)
        log.info("no hookledger.config.mjs here: serving the demo sources 'stripe' and 'github'");
      const serve = command === "serve";
      const metricsPort = serve ? undefined : portFromEnv("METRICS_PORT");
      const service = await startService(loaded.config, {
        log,
        serve,
        work: serve ? !values["no-worker"] && loaded.config.worker.enabled : true,
        ...(loaded.setup && { setup: loaded.setup }),
        ...(metricsPort !== undefined && { metricsPort }),
      });
      if (serve) process.stdout.write(`hookledger listening on ${service.url}\n`);
      else if (service.url) process.stdout.write(`hookledger worker metrics on ${service.url}/metrics\n`);
      else log.info("worker running");
      await new Promise<void>((resolve) => {
        const shutdown = (signal: string) => {
          log.info({ signal }, "stopping: finishing in-flight work");
          service.stop().then(resolve, resolve);
        };
        process.once("SIGINT", shutdown);
        process.once("SIGTERM", shutdown);
      });
      return 0;
    }
    case "migrate": {
      const { config } = await loadConfig(values.config, { secrets: false });
      const embedded = config.databaseUrl
        ? undefined
        : await startEmbeddedPostgres({ dataDir: join(".hookledger", "pg"), port: config.embeddedPort, log });
      const pool = createPool({
        connectionString: config.databaseUrl ?? embedded?.connectionString ?? "",
        role: "admin",
        max: 1,
      });
      try {
        const applied = await migrate(pool, config.schema);
        process.stdout.write(
          applied.length > 0 ? `applied ${applied.join(", ")}\n` : "migrations are current\n",
        );
      } finally {
        await pool.end();
        await embedded?.stop();
      }
      return 0;
    }
    case "stats": {
      await statsCommand(
        { config: values.config, since: values.since, source: values.source, json: values.json },
        (text) => process.stdout.write(text),
      );
      return 0;
    }
    default:
      throw new CliError(
        `unknown command '${command}'; commands are serve, worker, migrate, send, stats, events, replay, reconcile, prune (see --help)`,
        2,
      );
  }
}

function portFromEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new CliError(`${name}=${value} is not a port; set it to 0-65535, or unset it`, 2);
  }
  return port;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: "string" },
      "no-worker": { type: "boolean" },
      url: { type: "string" },
      since: { type: "string" },
      source: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean", short: "v" },
    },
  });
}

explainDatabaseFailures(main(process.argv.slice(2))).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof CliError || error instanceof MissingPackageError) {
      process.stderr.write(`hookledger: ${error.message}\n`);
      process.exit(error instanceof CliError ? error.exitCode : 1);
    }
    const cause = error instanceof Error ? error : new Error(String(error));
    process.stderr.write(
      `hookledger: ${cause.message}${cause.cause instanceof Error ? ` (${cause.cause.message})` : ""}\n`,
    );
    process.exit(1);
  },
);

/** LOG_FORMAT set to something unknown is a usage mistake (exit 2), named with its fix. */
function cliLogger() {
  try {
    return createLogger();
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
}
