import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { HookledgerConfig } from "../config/types.js";
import { ConfigError, type ResolvedConfig, resolveConfig } from "../config/validate.js";
import { connectionFile } from "../db/embedded.js";
import type { Pool } from "../db/pool.js";
import { demoConfig, setupDemo } from "../demo/config.js";
import { CliError } from "./errors.js";

const DEFAULT_FILES = ["hookledger.config.mjs", "hookledger.config.js"];

/** A loaded configuration and where it came from. */
export interface LoadedConfig {
  readonly config: ResolvedConfig;
  /** The file, or `undefined` for the built-in demo. */
  readonly file: string | undefined;
  /** The configuration as written (before env references are resolved): provider options by source. */
  readonly raw: HookledgerConfig;
  readonly setup?: (pool: Pool) => Promise<void>;
}

/**
 * Loads `--config FILE`, else `hookledger.config.mjs`/`.js` in the working directory, else the demo.
 *
 * @example
 * const { config } = await loadConfig(undefined);
 */
export async function loadConfig(file: string | undefined): Promise<LoadedConfig> {
  const path = file ? resolve(file) : DEFAULT_FILES.map((f) => resolve(f)).find((f) => existsSync(f));
  if (file && !existsSync(resolve(file))) {
    throw new CliError(
      `config file ${file} not found; pass an existing file to --config, or omit it for the demo`,
      2,
    );
  }
  try {
    if (!path) {
      const raw = demoConfig();
      return { config: resolveConfig(raw), file: undefined, raw, setup: setupDemo };
    }
    let module: { default?: HookledgerConfig };
    try {
      module = (await import(pathToFileURL(path).href)) as { default?: HookledgerConfig };
    } catch (error) {
      throw new CliError(`could not load ${path}: ${(error as Error).message}; fix the file and start again`);
    }
    if (!module.default) {
      throw new CliError(`${path} has no default export; export default defineConfig({ sources: [...] })`);
    }
    return { config: resolveConfig(module.default), file: path, raw: module.default };
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(`${path ?? "demo config"}: ${error.message}`);
    throw error;
  }
}

/**
 * The database a one-off command (migrate, send) talks to: DATABASE_URL / the config's URL, else the embedded
 * server that `hookledger serve` started in this directory.
 */
export async function commandDatabaseUrl(config: ResolvedConfig): Promise<string> {
  if (config.databaseUrl) return config.databaseUrl;
  const file = connectionFile(process.cwd());
  if (existsSync(file)) {
    const { connectionString } = JSON.parse(await readFile(file, "utf8")) as { connectionString: string };
    return connectionString;
  }
  throw new CliError(
    `no database: set DATABASE_URL, or start \`hookledger serve\` in this directory first (it records ${join(".hookledger", "connection.json")})`,
  );
}
