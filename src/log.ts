import { pino } from "pino";

/** The structured logger hookledger writes to (pino). Pass your app's pino logger to share its destination. */
export type Logger = pino.Logger;

/**
 * Creates a JSON logger. Fields that could carry a secret are redacted wherever they appear, as a second line of
 * defence: the code never logs secrets, signatures, tokens or raw bodies in the first place.
 *
 * @example
 * const log = createLogger({ level: "debug" });
 */
export function createLogger(options: { level?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
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
  return pino({ level: "silent" });
}
