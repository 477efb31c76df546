import type { RequestListener } from "node:http";
import type { ResolvedConfig } from "../config/validate.js";
import { createPool } from "../db/pool.js";
import type { PoolerMode } from "../db/pooler.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";
import { type DashboardUser, demoToken } from "./auth.js";
import { createDashboard, type Dashboard } from "./server.js";

/**
 * The dashboard as the service mounts it on its admin listener: its own small pool, its users from the
 * configuration, and on the demo (the embedded Postgres, no user configured) a `demo` user with a fresh token whose
 * login link is printed. Until `open()` (the ledger is migrated) its paths answer 503; other paths go to `next`.
 *
 * @example
 * const dashboard = mountDashboard({ config, connectionString, ledger, log, closers });
 * http.createServer(withOps(ops, dashboard.listener));
 * dashboard.open();
 */
export function mountDashboard(options: {
  config: ResolvedConfig;
  connectionString: string;
  pooler: PoolerMode;
  ledger: LedgerContext;
  log: Logger;
  closers: (() => Promise<void>)[];
}): { listener: RequestListener; open(): void; readonly path: string } {
  const { config, connectionString, pooler, ledger, log } = options;
  const { users, loginLinkUser } = dashboardUsers(config);
  // Up to 4 queries of one page load run at once; kept apart from the admin pool the metrics and stats share. No
  // view's statement should run for seconds (docs/benchmarks.md, "The dashboard on a million events"): one that
  // does is cancelled and answered 503 rather than left holding a connection.
  const db = createPool({
    connectionString,
    role: "admin",
    max: 4,
    statementTimeoutMs: 10_000,
    pooler,
  });
  options.closers.push(() => db.end());
  const dashboard: Dashboard = createDashboard({
    db,
    ledger,
    users,
    log,
    trustProxy: config.trustProxy,
    ...(loginLinkUser && { loginLinkUser }),
  });
  let ready = false;
  return {
    path: dashboard.loginLinkPath ?? "/dashboard/",
    open: () => {
      ready = true;
    },
    listener(req, res) {
      if (!dashboard.handles(req.url ?? "/")) return void res.writeHead(404).end();
      if (!ready) {
        return void res
          .writeHead(503, { "retry-after": "2", "content-type": "text/plain; charset=utf-8" })
          .end("hookledger is starting: the dashboard opens once the ledger is ready\n");
      }
      dashboard.listener(req, res);
    },
  };
}

/**
 * Who may sign in: the configured users, or on the demo (the embedded Postgres and no user configured) a `demo` user
 * with a fresh random token, whose login link the start prints.
 *
 * @example
 * const { users, loginLinkUser } = dashboardUsers(config); // loginLinkUser: "demo" on the demo
 */
export function dashboardUsers(config: Pick<ResolvedConfig, "database" | "dashboard">): {
  users: readonly DashboardUser[];
  loginLinkUser?: string;
} {
  if (config.database.kind === "url" || config.dashboard.users.length > 0)
    return { users: config.dashboard.users };
  return { users: [{ name: "demo", token: demoToken() }], loginLinkUser: "demo" };
}
