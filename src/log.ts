import { createRequire } from "node:module";
import type { pino as PinoFn } from "pino";
import type { PrettyOptions } from "pino-pretty";
import { pino } from "./deps.js";

/** The structured logger hookledger writes to (pino). Pass your app's pino logger to share its destination. */
export type Logger = PinoFn.Logger;

/** `json`: one JSON object per line, for machines. `pretty`: coloured, readable lines, for a terminal. */
export type LogFormat = "json" | "pretty";

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** @defaultValue env("LOG_LEVEL") or "info" */
  level?: string;
  /** Where lines go. @defaultValue standard output */
  destination?: PinoFn.DestinationStream;
  /**
   * @defaultValue env("LOG_FORMAT"); unset: `pretty` when standard output is a terminal (and no `destination` is
   * given), else `json`
   */
  format?: LogFormat;
}

/**
 * Creates a logger: JSON lines, or readable lines on a terminal (see `LoggerOptions.format`). Fields that could
 * carry a secret are redacted wherever they appear, in both formats, as a second line of defence: the code never
 * logs secrets, signatures, tokens or raw bodies in the first place.
 *
 * @throws when `LOG_FORMAT` is set to something other than `json` or `pretty`.
 * @example
 * import { createLogger } from "hookledger";
 *
 * const log = createLogger({ level: "debug", format: "json" });
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? logFormatFromEnv() ?? defaultFormat(options.destination);
  const destination = format === "pretty" ? prettyDestination(options.destination) : options.destination;
  return pino().pino(
    {
      name: "hookledger",
      level: options.level ?? process.env.LOG_LEVEL ?? "info",
      redact: {
        paths: [
          "secret",
          "secrets",
          "signature",
          "token",
          "body",
          "*.secret",
          "*.secrets",
          "*.signature",
          "*.token",
        ],
        censor: "[redacted]",
      },
    },
    destination,
  );
}

/** A logger that drops everything (tests, embedded use). */
export function silentLogger(): Logger {
  return pino().pino({ level: "silent" });
}

/** `LOG_FORMAT`, or `undefined` when unset; throws, naming the value and the choices, when it is neither format. */
export function logFormatFromEnv(): LogFormat | undefined {
  const value = process.env.LOG_FORMAT;
  if (value === undefined || value === "") return undefined;
  if (value === "json" || value === "pretty") return value;
  throw new Error(`LOG_FORMAT=${value} is not a log format; set it to "json" or "pretty", or unset it`);
}

function defaultFormat(destination: PinoFn.DestinationStream | undefined): LogFormat {
  return destination === undefined && process.stdout.isTTY ? "pretty" : "json";
}

// pino-pretty is loaded here only, so `import "hookledger"` and JSON logging never load it. Its formatter is called
// in line rather than through a pino transport: a transport runs in a worker thread (lines written just before
// `process.exit` can be lost) and must resolve its module from the built package. pino redacts before it
// serialises, so what reaches the formatter is already redacted.
function prettyDestination(destination: PinoFn.DestinationStream | undefined): PinoFn.DestinationStream {
  const require = createRequire(import.meta.url);
  const { prettyFactory } = require("pino-pretty") as typeof import("pino-pretty");
  const options: PrettyOptions = {
    colorize: destination === undefined && process.stdout.isTTY === true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,name",
  };
  const format = prettyFactory(options);
  const out = destination ?? pino().destination({ dest: 1, sync: true });
  return { write: (line: string) => void out.write(format(line)) };
}
