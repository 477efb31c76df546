import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { HookledgerConfig } from "../config/types.js";
import { ConfigError, type ResolvedConfig, resolveConfig } from "../config/validate.js";
import { connectionFile } from "../db/embedded.js";
import type { Pool } from "../db/pool.js";
import { demoConfig, setupDemo } from "../demo/config.js";
import { CliError } from "./errors.js";

const DEFAULT_FILES = [
  "hookledger.config.mjs",
  "hookledger.config.js",
  "hookledger.config.mts",
  "hookledger.config.ts",
];

/** A loaded configuration and where it came from. */
export interface LoadedConfig {
  readonly config: ResolvedConfig;
  /** The file, or `undefined` for the built-in demo. */
  readonly file: string | undefined;
  /** The configuration as written (before env references are resolved): provider options by source. */
  readonly raw: HookledgerConfig;
  readonly setup?: (pool: Pool) => Promise<void>;
}

/** Options of {@link loadConfig}. */
export interface LoadOptions {
  /**
   * Check the webhook secrets (and the schedules' API keys). `false` for commands that verify no delivery: migrate,
   * stats, events, prune, replay, reconcile. @defaultValue true
   */
  readonly secrets?: boolean;
  /** Check the alerts' URLs and secrets (`serve` and `worker` send alerts). @defaultValue the value of `secrets` */
  readonly alerts?: boolean;
}

/**
 * Loads `--config FILE`, else `hookledger.config.{mjs,js,mts,ts}` in the working directory, else the demo.
 *
 * @example
 * const { config } = await loadConfig(undefined, { secrets: false });
 */
export async function loadConfig(file: string | undefined, options: LoadOptions = {}): Promise<LoadedConfig> {
  const path = file ? resolve(file) : DEFAULT_FILES.map((f) => resolve(f)).find((f) => existsSync(f));
  if (file && !existsSync(resolve(file))) {
    throw new CliError(
      `config file ${file} not found; pass an existing file to --config, or omit it for the demo`,
      2,
    );
  }
  const resolveOptions = {
    secrets: options.secrets ?? true,
    ...(options.alerts !== undefined && { alerts: options.alerts }),
  };
  try {
    if (!path) {
      const raw = demoConfig();
      return {
        config: resolveConfig(raw, process.env, resolveOptions),
        file: undefined,
        raw,
        setup: setupDemo,
      };
    }
    const config = defaultExport(await importConfigModule(path));
    if (!config) {
      throw new CliError(`${path} has no default export; export default defineConfig({ sources: [...] })`);
    }
    return { config: resolveConfig(config, process.env, resolveOptions), file: path, raw: config };
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(`${path ?? "demo config"}: ${error.message}`);
    throw error;
  }
}

/**
 * The database a one-off command (migrate, send) talks to: the configured one (`database.url`, else
 * DATABASE_URL), else the embedded server that `hookledger serve` started in this directory.
 *
 * @example
 * const url = await commandDatabaseUrl(config);
 */
export async function commandDatabaseUrl(config: ResolvedConfig): Promise<string> {
  if (config.database.kind === "url") return config.database.url;
  const file = connectionFile(process.cwd());
  if (existsSync(file)) {
    const { connectionString } = JSON.parse(await readFile(file, "utf8")) as { connectionString: string };
    return connectionString;
  }
  throw new CliError(
    `no database: set DATABASE_URL, or start \`hookledger serve\` in this directory first (it records ${join(".hookledger", "connection.json")})`,
  );
}

// A .ts file outside a "type": "module" package is compiled as CommonJS: its default export arrives one level down.
function defaultExport(module: unknown): HookledgerConfig | undefined {
  const value = (module as { default?: unknown }).default;
  if (typeof value === "object" && value !== null && !("sources" in value) && "default" in value) {
    return (value as { default?: HookledgerConfig }).default;
  }
  return value as HookledgerConfig | undefined;
}

type TsImport = (specifier: string, parentURL: string) => Promise<unknown>;

async function importConfigModule(path: string): Promise<unknown> {
  const url = pathToFileURL(path).href;
  try {
    if (!/\.[cm]?ts$/.test(path) || nodeStripsTypes()) return await import(url);
    const tsImport = await findTsx(path);
    if (!tsImport) {
      throw new CliError(
        `${path} is TypeScript, which Node ${process.version} does not load by itself; npm install -D tsx (or compile the config to hookledger.config.mjs)`,
      );
    }
    return await tsImport(url, url);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`could not load ${path}: ${(error as Error).message}; fix the file and start again`);
  }
}

// Node strips types itself from 22.18/23.6 (process.features.typescript), or earlier 22.x with the flag.
function nodeStripsTypes(): boolean {
  const features = process.features as { typescript?: unknown };
  const flags = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].join(" ");
  return Boolean(features.typescript) || flags.includes("--experimental-strip-types");
}

// tsx installed beside hookledger, or in the project of the config file (a pnpm layout keeps them apart).
async function findTsx(configPath: string): Promise<TsImport | undefined> {
  const candidates = ["tsx/esm/api"];
  try {
    candidates.push(pathToFileURL(createRequire(configPath).resolve("tsx/esm/api")).href);
  } catch {
    // not installed next to the config file either
  }
  for (const specifier of candidates) {
    try {
      const api = (await import(specifier)) as { tsImport?: TsImport };
      if (typeof api.tsImport === "function") return api.tsImport;
    } catch {
      // try the next place
    }
  }
  return undefined;
}
