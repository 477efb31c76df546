import { databaseAddress } from "../db/wait.js";
/** A CLI failure the user can fix: printed as `hookledger[ command]: <message>` without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    /** 2 for a usage mistake, 1 for anything else. */
    readonly exitCode = 1,
    /** The command the message is about (`serve`, `events list`), printed after `hookledger`. */
    readonly command?: string,
  ) {
    super(message);
    this.name = "CliError";
  }
}

type Failure = Error & { code?: string; address?: string; port?: number; hostname?: string };

/**
 * Turns a failure to reach or log in to Postgres into one line naming the server (`host:port/database`, never the
 * password) and `check DATABASE_URL`; `undefined` for any other error. Without `connectionString`, the server is
 * taken from the error where it says (a refused address, an unknown host name).
 *
 * @example
 * const failure = databaseFailure(error, connectionString);
 * if (failure) throw failure;
 */
export function databaseFailure(error: unknown, connectionString?: string): CliError | undefined {
  if (!(error instanceof Error)) return undefined;
  const first = (error instanceof AggregateError ? error.errors[0] : error) as Failure | undefined;
  if (!(first instanceof Error)) return undefined;
  const code = first.code ?? (error as Failure).code;
  const at = databaseAddress(connectionString) ?? serverFromError(first);
  const where = at ? `Postgres at ${at}` : "Postgres";
  const reason = reasonOf(code, first.message, first.hostname);
  if (reason === undefined) return undefined;
  const line = reason.login ? `${where} refused: ${reason.text}` : `cannot reach ${where}: ${reason.text}`;
  return new CliError(`${line}; check DATABASE_URL`);
}

/**
 * `promise`, with a database failure as its one-line {@link CliError} (see {@link databaseFailure}) and any other
 * failure as is; for the CLI's top level.
 *
 * @example
 * explainDatabaseFailures(main(argv)).then(exit, report);
 */
export function explainDatabaseFailures<T>(promise: Promise<T>): Promise<T> {
  return promise.catch((error: unknown) => {
    throw databaseFailure(error) ?? error;
  });
}

function reasonOf(
  code: string | undefined,
  message: string,
  hostname: string | undefined,
): { text: string; login?: true } | undefined {
  switch (code) {
    case "ECONNREFUSED":
      return { text: "connection refused (is the server running, on that host and port?)" };
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return { text: `host name ${hostname ? `'${hostname}' ` : ""}not found` };
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return { text: `no route or no answer (${code})` };
    case "28P01": // invalid_password: the message names the user, never the password
    case "28000": // invalid_authorization_specification: unknown role, or no pg_hba.conf entry
      return { text: message, login: true };
    case "3D000": // invalid_catalog_name
      return { text: message };
  }
  if (/timeout exceeded when trying to connect|connection timeout/i.test(message)) {
    return { text: "no answer in time (connection timeout)" };
  }
  if (/Connection terminated unexpectedly/.test(message)) {
    return { text: "the server closed the connection" };
  }
  return undefined;
}

function serverFromError(error: Failure): string | undefined {
  if (error.address !== undefined) return `${error.address}${error.port ? `:${error.port}` : ""}`;
  return error.hostname;
}
