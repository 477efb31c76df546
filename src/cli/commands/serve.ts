import { createLogger } from "../../log.js";
import { loadConfig } from "../config.js";
import { parseOptions } from "../options.js";
import { parsePort, runUntilSignal } from "../run-service.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger serve [--config FILE] [--port N] [--no-worker] [--no-migrate] [--ready-file PATH]

Receives webhooks on POST /webhooks/:source and runs the worker in the same process. /metrics, /healthz, /readyz
and the web dashboard (/dashboard/) answer on a separate admin listener (ADMIN_HOST, default 127.0.0.1; ADMIN_PORT,
default the webhook port + 10000), never on the webhook port. The dashboard's users sign in with a token
(HOOKLEDGER_DASHBOARD_TOKEN, or the config's dashboard.users); on the demo "hookledger dashboard on URL" prints a
local login link. Without DATABASE_URL it starts an embedded Postgres in ./.hookledger/pg; the
ledger's migrations run at start. A database out of reach at start is waited for (retrying 0.5 s to 10 s apart;
/readyz answers 503 database_unreachable and webhooks 503 meanwhile). Logs are JSON lines on stdout; "hookledger
listening on URL" goes to stderr once the service is ready.

Options:
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the built-in demo)
  --port N        the port to listen on; 0 picks a free one. Precedence: --port, then PORT, then the config
                  file's port, then 3000
  --no-worker     receive only: run \`hookledger worker\` elsewhere to apply the events
  --no-migrate    do not change the schema (a role without DDL rights): while migrations are missing, log the
                  command to run, answer /readyz 503 migrations_pending and wait until they are applied
  --ready-file PATH
                  write PATH (the process id) once ready; removed when the process stops
  -h, --help      show this help

Environment: DATABASE_URL, PORT, HOST, ADMIN_PORT, ADMIN_HOST, HOOKLEDGER_SCHEMA, HOOKLEDGER_MODE, HOOKLEDGER_DASHBOARD_TOKEN,
  HOOKLEDGER_REPLAY_TOKEN, HOOKLEDGER_TRUST_PROXY (count failed verifications per X-Forwarded-For: only behind a
  proxy), REDIS_URL, LOG_LEVEL, LOG_FORMAT (json | pretty), HOOKLEDGER_EMBEDDED_PORT (the demo's embedded Postgres),
  HOOKLEDGER_SEMI_SPACE_MB (V8's young generation, Node 22.15+: default 8, 0 keeps node's own),
  HOOKLEDGER_HEAP_GROWING_PERCENT (V8's old generation growth between full collections: default 30, 0 keeps V8's own)

Examples:
  hookledger serve                                   # the demo on an embedded Postgres
  DATABASE_URL=postgres://… hookledger serve --config ./hookledger.config.mjs --port 8080
  hookledger serve --no-worker                       # receivers here, workers on other hosts
`;

/**
 * `hookledger serve`: the receiver and, unless `--no-worker`, the worker, until SIGINT or SIGTERM.
 *
 * @example
 * await command.run(["--port", "8080"], io);
 */
export const command: Command = {
  summary: "receive webhooks on POST /webhooks/:source and run the worker",
  async run(args, io) {
    const { values } = parseOptions("serve", args, {
      config: { type: "string" },
      port: { type: "string" },
      "no-worker": { type: "boolean" },
      "no-migrate": { type: "boolean" },
      "ready-file": { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    const port =
      values.port === undefined
        ? undefined
        : parsePort(values.port, `--port ${values.port}`, "give 0-65535 (0 picks a free port)");
    const log = createLogger();
    const loaded = await loadConfig(values.config);
    for (const warning of loaded.config.warnings) log.warn({ config: loaded.file }, warning);
    if (!loaded.file)
      log.info("no hookledger.config.mjs here: serving the demo sources 'stripe' and 'github'");
    // --port beats PORT, which beats the config file's port (resolveConfig), which beats 3000.
    const config = port === undefined ? loaded.config : { ...loaded.config, port };
    return runUntilSignal(
      config,
      {
        log,
        serve: true,
        work: !values["no-worker"] && config.worker.enabled,
        migrate: !values["no-migrate"],
        ...(loaded.setup && { setup: loaded.setup }),
      },
      { port: config.port, fix: "set PORT or --port to another port" },
      ({ url, adminUrl, dashboardUrl }) => {
        // The dashboard's address stays out of the log: on the demo it holds the login link's key.
        log.info({ url, adminUrl }, "listening");
        // stderr: stdout carries the JSON log stream.
        const dashboard = dashboardUrl ? `hookledger dashboard on ${dashboardUrl}\n` : "";
        io.err(`hookledger listening on ${url}\nhookledger admin on ${adminUrl}\n${dashboard}`);
      },
      values["ready-file"],
    );
  },
};
