import { isEnvRef, readConfigurable } from "./env.js";
import type { HookledgerConfig } from "./types.js";
import type { PoolerMode } from "../db/pooler.js";

/**
 * Where the ledger lives: the Postgres the configuration names, or the embedded server when it names none (the
 * demo, or a configuration without `database.url` and no `DATABASE_URL`).
 *
 * @example
 * if (config.database.kind === "embedded") console.log(`embedded Postgres on port ${config.database.port}`);
 */
export type ResolvedDatabase =
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "embedded"; readonly port: number };

const EMBEDDED_HINT = "or remove database.url to use the embedded demo database";

/**
 * Decides the database. A `database.url` that resolves to nothing refuses to start (pushed to `problems`) rather
 * than falling back to a throwaway embedded server that would answer providers 200 and lose their events; only an
 * absent `database.url` (or an unset `env.optional` one) means the embedded server.
 *
 * @example
 * const database = resolveDatabase(config, process.env, 54329, problems);
 */
export function resolveDatabase(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv,
  embeddedPort: number,
  problems: string[],
): ResolvedDatabase {
  const ref = config.database?.url;
  const url = readConfigurable(ref ?? { env: "DATABASE_URL" }, environment);
  if (url !== undefined && url.trim() !== "") return { kind: "url", url };
  if (ref === undefined || (isEnvRef(ref) && ref.optional)) return { kind: "embedded", port: embeddedPort };
  problems.push(
    isEnvRef(ref)
      ? `database.url: the environment variable ${ref.env} is not set; set it to your Postgres URL (${EMBEDDED_HINT})`
      : `database.url: empty; write your Postgres URL (${EMBEDDED_HINT})`,
  );
  return { kind: "embedded", port: embeddedPort };
}

/**
 * The address to listen on. `PORT` and `HOST` in the environment beat the configuration's `port` and `host`, which
 * beat 127.0.0.1:3000 (`hookledger serve --port` beats them all). 0 asks the OS for a free port.
 *
 * @example
 * resolveListen({ port: 8080, sources: [] }, { PORT: "9000" }, []); // { host: "127.0.0.1", port: 9000 }
 */
export function resolveListen(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv,
  problems: string[],
): { host: string; port: number } {
  const fromEnv = readConfigurable({ env: "PORT" }, environment);
  const text = fromEnv ?? readConfigurable(config.port, environment);
  let port = 3000;
  if (text !== undefined) {
    const n = Number(text);
    if (text.trim() !== "" && Number.isInteger(n) && n >= 0 && n <= 65535) port = n;
    else {
      const field = fromEnv === undefined ? "port" : "PORT (environment)";
      problems.push(`${field}: expected 0-65535, got ${JSON.stringify(text)}; set PORT or the config's port`);
    }
  }
  const host =
    readConfigurable({ env: "HOST" }, environment) ??
    readConfigurable(config.host, environment) ??
    "127.0.0.1";
  return { host, port };
}

/** How the service reaches Postgres besides its URL: through a pooler or not, and a direct URL for sessions. */
export interface ResolvedPooler {
  readonly pooler: PoolerMode;
  /** `database.directUrl` (or `DATABASE_DIRECT_URL`), resolved; only read with `pooler: "transaction"`. */
  readonly directUrl: string | undefined;
}

/**
 * Reads `database.pooler` (`HOOKLEDGER_DATABASE_POOLER` beats it) and `database.directUrl`. A value that is not a
 * pooler mode, or a scheduled prune behind a transaction pooler without a direct URL (its lock is a session's, which
 * a pooler would hand from one server connection to another), is a problem that stops the start.
 *
 * @example
 * resolvePooler({ sources: [] }, { HOOKLEDGER_DATABASE_POOLER: "transaction" }, false, []);
 * // { pooler: "transaction", directUrl: undefined }
 */
export function resolvePooler(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv,
  prunes: boolean,
  problems: string[],
): ResolvedPooler {
  const fromEnv = environment.HOOKLEDGER_DATABASE_POOLER;
  const value = fromEnv !== undefined && fromEnv !== "" ? fromEnv : (config.database?.pooler ?? "none");
  const field = fromEnv ? "HOOKLEDGER_DATABASE_POOLER" : "database.pooler";
  if (value !== "none" && value !== "transaction") {
    problems.push(`${field}: expected "none" or "transaction", got ${JSON.stringify(value)}`);
    return { pooler: "none", directUrl: undefined };
  }
  const read = readConfigurable(config.database?.directUrl ?? { env: "DATABASE_DIRECT_URL" }, environment);
  const directUrl = read !== undefined && read.trim() !== "" ? read : undefined;
  if (value === "transaction" && prunes && directUrl === undefined) {
    problems.push(
      `schedules.prune: behind a transaction pooler (${field}) the scheduled prune needs database.directUrl (or DATABASE_DIRECT_URL), a URL that reaches Postgres directly, for its lock; or run \`hookledger prune\` from a scheduler instead`,
    );
  }
  return { pooler: value, directUrl };
}
