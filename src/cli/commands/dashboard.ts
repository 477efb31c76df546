import { createServer } from "node:http";
import { migrationsCurrent } from "../../db/migrate.js";
import { dashboardUsers } from "../../dashboard/mount.js";
import { createDashboard } from "../../dashboard/server.js";
import { createLogger } from "../../log.js";
import { openLedger } from "../database.js";
import { CliError } from "../errors.js";
import { parseOptions } from "../options.js";
import { parsePort, portFromEnv } from "../run-service.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger dashboard [--config FILE] [--port N] [--host HOST]

Serves the web dashboard on its own (hookledger serve also serves it, on its admin listener): the events list,
one event, dead and failed events with bulk retry and requeue, and health charts, over the configured ledger, or
over the embedded Postgres that \`hookledger serve\` started in this directory. "hookledger dashboard on URL" goes
to stderr once it listens. Users sign in with a token (HOOKLEDGER_DASHBOARD_TOKEN, or the config's
dashboard.users); on the demo (no database configured, no user) the printed URL is a local login link.

Options:
  --port N        the port to listen on (default: DASHBOARD_PORT, else 3002; 0 picks a free one)
  --host HOST     the address to listen on (default: DASHBOARD_HOST, else 127.0.0.1)
  --config FILE   configuration module (default: ./hookledger.config.mjs, else the built-in demo)
  -h, --help      show this help

Environment: DATABASE_URL, HOOKLEDGER_SCHEMA, HOOKLEDGER_DASHBOARD_TOKEN, DASHBOARD_PORT, DASHBOARD_HOST

Examples:
  hookledger dashboard                                   # next to \`hookledger serve\` on the demo
  HOOKLEDGER_DASHBOARD_TOKEN=… DATABASE_URL=postgres://… hookledger dashboard --port 8081
`;

/**
 * `hookledger dashboard`: the dashboard alone, until SIGINT or SIGTERM.
 *
 * @example
 * await command.run(["--port", "8081"], io);
 */
export const command: Command = {
  summary: "the web dashboard on its own listener: events, one event, dead & failed, health",
  async run(args, io) {
    const { values } = parseOptions("dashboard", args, {
      config: { type: "string" },
      port: { type: "string" },
      host: { type: "string" },
      help: { type: "boolean", short: "h" },
    });
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    const port =
      values.port === undefined
        ? (portFromEnv("DASHBOARD_PORT") ?? 3002)
        : parsePort(values.port, `--port ${values.port}`, "give 0-65535 (0 picks a free port)");
    const host = values.host ?? (process.env.DASHBOARD_HOST || "127.0.0.1");
    const db = await openLedger(values.config);
    const { config, pool, ledger } = db;
    const log = createLogger();
    try {
      if (!(await migrationsCurrent(pool, ledger.schema).catch(() => false))) {
        throw new CliError(
          `schema '${ledger.schema}' has no current ledger; run \`hookledger migrate\` (or start \`hookledger serve\`) first, or set HOOKLEDGER_SCHEMA to the ledger's schema`,
        );
      }
      const { users, loginLinkUser } = dashboardUsers(config);
      if (users.length === 0) {
        throw new CliError(
          "no dashboard user: set HOOKLEDGER_DASHBOARD_TOKEN (16 characters or more, e.g. `openssl rand -hex 24`) or the config's dashboard.users",
          2,
        );
      }
      const dashboard = createDashboard({
        db: pool,
        ledger,
        users,
        log,
        ...(loginLinkUser && { loginLinkUser }),
      });
      const server = createServer((req, res) => {
        if (dashboard.handles(req.url ?? "/")) dashboard.listener(req, res);
        else if (req.url === "/") res.writeHead(303, { location: "/dashboard/" }).end();
        else res.writeHead(404).end();
      });
      await new Promise<void>((resolve, reject) => {
        server.once("error", (error: NodeJS.ErrnoException) =>
          reject(
            error.code === "EADDRINUSE"
              ? new CliError(`port ${port} is in use; set --port or DASHBOARD_PORT to another port`)
              : error,
          ),
        );
        server.listen(port, host, resolve);
      });
      const address = server.address();
      const url = `http://${host}:${typeof address === "object" && address ? address.port : port}`;
      io.err(`hookledger dashboard on ${url}${dashboard.loginLinkPath ?? "/dashboard/"}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          server.close(() => resolve());
          server.closeAllConnections();
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
      return 0;
    } finally {
      await db.close();
    }
  },
};
