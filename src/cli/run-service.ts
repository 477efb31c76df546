import type { ResolvedConfig } from "../config/validate.js";
import type { Logger } from "../log.js";
import { rm, writeFile } from "node:fs/promises";
import { type Service, type ServiceOptions, startService } from "../service.js";
import { CliError } from "./errors.js";

/**
 * Starts the service for `serve` or `worker` and runs it until SIGINT or SIGTERM, then finishes in-flight work.
 * A database out of reach at start is waited for (see `untilDatabase`), and a signal meanwhile exits 0 at once.
 * A port already taken becomes one line naming the port and `fix` (no stack; the admin port's names ADMIN_PORT).
 * `announce` gets the service once it is ready (for its URLs), and `readyFile` (when given) is written then (the process
 * id and a newline) and removed when the process stops.
 *
 * @example
 * await runUntilSignal(config, { log, serve: true, work: true }, { port: config.port, fix: "set PORT or --port …" }, ({ url }) => {});
 */
export async function runUntilSignal(
  config: ResolvedConfig,
  options: ServiceOptions,
  port: { readonly port: number; readonly fix: string },
  announce: (service: Service) => void,
  readyFile?: string,
): Promise<number> {
  const log: Logger = options.log;
  const starting = new AbortController();
  let service: Service | undefined;
  let stopped: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const shutdown = (signal: string) => {
    process.off("SIGINT", shutdown);
    process.off("SIGTERM", shutdown);
    if (service === undefined) {
      log.info({ signal }, "stopping before the service started");
      starting.abort(new Error(`${signal} before the service started`));
      return;
    }
    log.info({ signal }, "stopping: finishing in-flight work");
    const running = service;
    const removed = readyFile === undefined ? Promise.resolve() : rm(readyFile, { force: true });
    removed.then(() => running.stop()).then(stopped, stopped);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  try {
    service = await startService(config, { ...options, signal: starting.signal });
  } catch (error) {
    if (starting.signal.aborted) return 0;
    const failure = error as NodeJS.ErrnoException & { port?: number };
    // Only the HTTP listen: the embedded Postgres reports its own port problems.
    if (failure.code === "EADDRINUSE" && failure.syscall === "listen") {
      const admin = options.serve && failure.port !== undefined && failure.port !== port.port;
      const fix = admin ? "set ADMIN_PORT or the config's admin.port to another port" : port.fix;
      throw new CliError(`port ${failure.port ?? port.port} is in use; ${fix}, or stop the process using it`);
    }
    throw error;
  }
  if (starting.signal.aborted) {
    // The signal came as the start finished: it found no service to stop.
    await service.stop();
    return 0;
  }
  if (readyFile !== undefined) {
    await writeFile(readyFile, `${process.pid}\n`).catch(async (error: Error) => {
      await service?.stop();
      throw new CliError(`cannot write the ready file: ${error.message}; give --ready-file a writable path`);
    });
  }
  announce(service);
  await done;
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
