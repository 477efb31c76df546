import type { ResolvedConfig } from "../config/validate.js";
import type { Logger } from "../log.js";
import { type ServiceOptions, startService } from "../service.js";
import { CliError } from "./errors.js";

/**
 * Starts the service for `serve` or `worker` and runs it until SIGINT or SIGTERM, then finishes in-flight work.
 * A port already taken becomes one line naming the port and `fix` (no stack; the admin port's names ADMIN_PORT);
 * `announce` gets the service's URLs once it listens.
 *
 * @example
 * await runUntilSignal(config, { log, serve: true, work: true }, { port: config.port, fix: "set PORT or --port …" }, (url) => {});
 */
export async function runUntilSignal(
  config: ResolvedConfig,
  options: ServiceOptions,
  port: { readonly port: number; readonly fix: string },
  announce: (url: string | undefined, adminUrl: string | undefined) => void,
): Promise<number> {
  const log: Logger = options.log;
  const service = await startService(config, options).catch(
    (error: NodeJS.ErrnoException & { port?: number }) => {
      // Only the HTTP listen: the embedded Postgres reports its own port problems.
      if (error.code === "EADDRINUSE" && error.syscall === "listen") {
        const admin = options.serve && error.port !== undefined && error.port !== port.port;
        const fix = admin ? "set ADMIN_PORT or the config's admin.port to another port" : port.fix;
        throw new CliError(`port ${error.port ?? port.port} is in use; ${fix}, or stop the process using it`);
      }
      throw error;
    },
  );
  announce(service.url, service.adminUrl);
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

/**
 * Reads a port from `name` in the environment: `undefined` when unset or empty; anything but 0-65535 is a usage
 * error naming the variable.
 *
 * @example
 * const metricsPort = portFromEnv("METRICS_PORT");
 */
export function portFromEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  return parsePort(value, `${name}=${value}`, `set ${name} to 0-65535, or unset it`);
}

/**
 * Reads a port number (0 picks a free one); anything else is a usage error naming `what` with `fix`.
 *
 * @example
 * parsePort("8080", "--port 8080", "give 0-65535"); // 8080
 */
export function parsePort(text: string, what: string, fix: string): number {
  const port = /^\d{1,5}$/.test(text.trim()) ? Number(text) : Number.NaN;
  if (!(port >= 0 && port <= 65535)) throw new CliError(`${what} is not a port; ${fix}`, 2);
  return port;
}
