import { createLogger } from "../../log.js";
import { loadConfig } from "../config.js";
import { parseOptions } from "../options.js";
import { portFromEnv, runUntilSignal } from "../run-service.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger worker [--config FILE] [--no-migrate] [--ready-file PATH]

Runs only the worker: picks claimed events from the ledger and applies each with its handler, the version guard
and the settle in one transaction. Any number of workers may share one database. Also runs the configured
schedules (prune, reconcile). A database out of reach at start is waited for (retrying 0.5 s to 10 s apart).
Logs are JSON lines on stdout; "hookledger worker ready" goes to stderr once the worker runs.

Options:
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the built-in demo)
  --no-migrate    do not change the schema (a role without DDL rights): while migrations are missing, log the
                  command to run and wait until they are applied
  --ready-file PATH
                  write PATH (the process id) once the worker runs; removed when it stops (a readiness probe
                  without METRICS_PORT: test -f PATH)
  -h, --help      show this help

Environment: DATABASE_URL, HOOKLEDGER_SCHEMA, LOG_LEVEL, LOG_FORMAT; METRICS_PORT serves /metrics, /healthz and /readyz on
  this port (0 picks a free one; "hookledger worker metrics on URL" goes to stderr); HOOKLEDGER_SEMI_SPACE_MB (V8's
  young generation, Node 22.15+: default 8, 0 keeps node's own); HOOKLEDGER_HEAP_GROWING_PERCENT (V8's old
  generation growth between full collections: default 30, 0 keeps V8's own)

Examples:
  DATABASE_URL=postgres://… hookledger worker --config ./hookledger.config.mjs
  METRICS_PORT=9464 hookledger worker
`;

/**
 * `hookledger worker`: the worker alone, until SIGINT or SIGTERM.
 *
 * @example
 * await command.run(["--config", "./hookledger.config.mjs"], io);
 */
export const command: Command = {
  summary: "run only the worker (any number of them may share one database)",
  async run(args, io) {
    const { values } = parseOptions("worker", args, {
      config: { type: "string" },
      "no-migrate": { type: "boolean" },
      "ready-file": { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    const metricsPort = portFromEnv("METRICS_PORT");
    const log = createLogger();
    const loaded = await loadConfig(values.config);
    for (const warning of loaded.config.warnings) log.warn({ config: loaded.file }, warning);
    return runUntilSignal(
      loaded.config,
      {
        log,
        serve: false,
        work: true,
        migrate: !values["no-migrate"],
        ...(loaded.setup && { setup: loaded.setup }),
        ...(metricsPort !== undefined && { metricsPort }),
      },
      { port: metricsPort ?? 0, fix: "set METRICS_PORT to another port" },
      ({ url }) => {
        log.info("worker running");
        if (url !== undefined) {
          log.info({ url: `${url}/metrics` }, "worker metrics listening");
          io.err(`hookledger worker metrics on ${url}/metrics\n`);
        }
        io.err("hookledger worker ready\n");
      },
      values["ready-file"],
    );
  },
};
