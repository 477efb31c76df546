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
  const destination =
    format === "pretty" ? prettyDestination(options.destination) : (options.destination ?? stdoutLines());
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

// JSON lines go to standard output through one asynchronous writer per process. A synchronous write cost the event
// loop 4–16 µs more per "delivery received" line than this writer, which spends 6–10 µs on the whole line
// (docs/benchmarks.md, "What logging cost"). The lines logged while a write is under way leave together in the next
// one, off the event loop; nothing waits for a buffer to fill, so a quiet service's lines appear at once. pino
// writes what is still buffered synchronously when the process exits; only the write under way at that instant can
// be lost, which is why the CLI waits for it (stdoutLinesWritten). One writer, not one per logger, so the lines of
// several loggers keep the order they were logged in.
class StdoutLines {
  private readonly buffered = pino().destination({ dest: 1, sync: false });
  private direct: PinoFn.DestinationStream | undefined;

  write(line: string): void {
    (this.direct ?? this.buffered).write(line);
  }

  // Lines logged from here on are written synchronously, and may precede the last buffered ones.
  written(ms: number): Promise<void> {
    if (this.direct !== undefined) return Promise.resolve();
    this.direct = pino().destination({ dest: 1, sync: true });
    const buffered = this.buffered;
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      buffered.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      buffered.end();
    });
  }
}

let stdout: StdoutLines | undefined;

function stdoutLines(): PinoFn.DestinationStream {
  stdout ??= new StdoutLines();
  return stdout;
}

/**
 * Waits until the lines loggers wrote to standard output have left the process (at most `ms`); later lines are
 * written synchronously. The CLI calls it before `process.exit`, which would cut off a write still under way.
 *
 * @example
 * await stdoutLinesWritten();
 * process.exit(code);
 */
export function stdoutLinesWritten(ms = 2000): Promise<void> {
  return stdout?.written(ms) ?? Promise.resolve();
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
