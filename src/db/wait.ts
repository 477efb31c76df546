import type { Logger } from "../log.js";
import { type HostList, parseHostList } from "./hosts.js";

type Failure = Error & { code?: string };

// Network failures and the server's own "not now" answers: the same server may answer in a moment. A wrong
// password, an unknown database or host name stays an error: waiting would not fix it.
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "EPIPE",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up, shutting down, in recovery
  "53300", // too_many_connections
]);
const TRANSIENT_MESSAGE =
  /timeout exceeded when trying to connect|connection timeout|Connection terminated|not queryable/i;

function firstFailure(error: unknown): Failure | undefined {
  const first = error instanceof AggregateError ? error.errors[0] : error;
  return first instanceof Error ? first : undefined;
}

/**
 * Whether `error` says the database is out of reach for now (refused, reset, starting up, too many connections,
 * a connection timeout), as opposed to a mistake in the configuration or the SQL.
 *
 * @example
 * isTransientDatabaseError(Object.assign(new Error("starting up"), { code: "57P03" })); // true
 */
export function isTransientDatabaseError(error: unknown): boolean {
  const failure = firstFailure(error);
  if (failure === undefined) return false;
  const code = failure.code ?? (error as Failure).code;
  if (code !== undefined && (TRANSIENT_CODES.has(code) || code.startsWith("08"))) return true;
  if (TRANSIENT_MESSAGE.test(failure.message)) return true;
  // `migration 004_tombstones.sql failed`, caused by the connection lost under it.
  return failure.cause !== undefined && isTransientDatabaseError(failure.cause);
}

/**
 * A short reason for a transient failure, for the log and for people: `connection refused`, or the server's message.
 *
 * @example
 * waitReason(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })); // "connection refused"
 */
export function waitReason(error: unknown): string {
  const failure = firstFailure(error);
  const code = failure?.code ?? (error as Failure | undefined)?.code;
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "57P03") return `${failure?.message ?? "the server cannot accept connections now"} (57P03)`;
  return failure?.message ?? String(error);
}

/**
 * `host:port/database` of a `postgres://` URL (never the user or password); `undefined` when it does not parse.
 *
 * @example
 * databaseAddress("postgres://app:secret@db:5432/shop"); // "db:5432/shop"
 * databaseAddress("postgres://app@db1,db2:5433/shop"); // "db1:5432,db2:5433/shop"
 */
export function databaseAddress(connectionString: string | undefined): string | undefined {
  if (connectionString === undefined) return undefined;
  const list = safeHostList(connectionString);
  const text = list?.url ?? connectionString;
  if (!URL.canParse(text)) return undefined;
  const url = new URL(text);
  const hosts = list
    ? list.hosts.map((h) => `${h.host}:${h.port}`).join(",")
    : `${url.hostname || "localhost"}:${url.port || "5432"}`;
  const database = decodeURIComponent(url.pathname.replace(/^\//, ""));
  return `${hosts}${database ? `/${database}` : ""}`;
}

/** Options of {@link untilDatabase}. */
export interface UntilDatabaseOptions {
  readonly log: Logger;
  /** Named in the log: `host:port/database` (see {@link databaseAddress}). */
  readonly where: string;
  /** Stops the wait: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** The first pause. @defaultValue 500 */
  readonly minDelayMs?: number;
  /** Pauses double up to this. @defaultValue 10000 */
  readonly maxDelayMs?: number;
  /** Hears each change: the reason while waiting, `undefined` once `step` succeeded. */
  readonly onWait?: (reason: string | undefined) => void;
}

/**
 * Runs `step` until it succeeds, pausing 0.5 s, 1 s, 2 s … up to 10 s after each transient database failure (see
 * {@link isTransientDatabaseError}); any other failure rejects at once. The log says `waiting for the database at
 * <where>: <reason>; retrying` once per reason (not per attempt), and `the database is back` once after a wait.
 *
 * @example
 * await untilDatabase(() => migrate(pool, schema), { log, where: databaseAddress(url) ?? "?" , signal });
 */
export async function untilDatabase<T>(step: () => Promise<T>, options: UntilDatabaseOptions): Promise<T> {
  const { log, where, signal } = options;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  let delayMs = options.minDelayMs ?? 500;
  let said: string | undefined;
  const since = Date.now();
  for (;;) {
    signal?.throwIfAborted();
    try {
      const result = await step();
      if (said !== undefined) {
        log.info({ database: where, waitedMs: Date.now() - since }, `the database is back at ${where}`);
        options.onWait?.(undefined);
      }
      return result;
    } catch (error) {
      if (!isTransientDatabaseError(error)) throw error;
      const reason = waitReason(error);
      if (reason !== said) {
        log.warn({ database: where, reason }, `waiting for the database at ${where}: ${reason}; retrying`);
        said = reason;
        options.onWait?.(reason);
      }
    }
    await pause(delayMs, signal);
    delayMs = Math.min(delayMs * 2, maxDelayMs);
  }
}

/**
 * Resolves after `ms`, or rejects with `signal`'s reason as soon as it is aborted.
 *
 * @example
 * await pause(2000, controller.signal);
 */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      if (signal?.aborted) reject(signal.reason);
      else resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

function safeHostList(connectionString: string): HostList | undefined {
  try {
    return parseHostList(connectionString);
  } catch {
    return undefined;
  }
}
