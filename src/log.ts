import type { pino as PinoFn } from "pino";
import { pino } from "./deps.js";

/** The structured logger hookledger writes to (pino). Pass your app's pino logger to share its destination. */
export type Logger = PinoFn.Logger;

/**
 * Creates a JSON logger. Fields that could carry a secret are redacted wherever they appear, as a second line of
 * defence: the code never logs secrets, signatures, tokens or raw bodies in the first place.
 *
 * @example
 * const log = createLogger({ level: "debug" });
 */
export function createLogger(
  options: { level?: string; destination?: PinoFn.DestinationStream } = {},
): Logger {
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
    options.destination,
  );
}

/** A logger that drops everything (tests, embedded use). */
export function silentLogger(): Logger {
  return pino().pino({ level: "silent" });
}
