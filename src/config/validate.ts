import type { Source } from "../edge/receiver.js";
import { createProvider } from "../providers/index.js";
import { standardSecretKey } from "../providers/standard.js";
import { defaultRetryPolicy, type RetryPolicy } from "../worker/backoff.js";
import { Handlers } from "../worker/handlers.js";
import { type Configurable, isEnvRef } from "./env.js";
import { type ResolvedSchedules, resolveSchedules } from "./schedules.js";
import { providerOptionChecks } from "./provider-options.js";
import type { HookledgerConfig, ProviderName } from "./types.js";

/** A configuration whose every value is checked and resolved. */
export interface ResolvedConfig {
  readonly databaseUrl: string | undefined;
  readonly schema: string;
  readonly embeddedPort: number;
  readonly host: string;
  readonly port: number;
  readonly sources: readonly Source[];
  /** The replay route's token (`HOOKLEDGER_REPLAY_TOKEN`); unset refuses every replay. */
  readonly replayToken: string | undefined;
  readonly schedules: ResolvedSchedules;
  /** Legal but risky choices, each naming the field; the service logs them at start. */
  readonly warnings: readonly string[];
  readonly handlers: Handlers;
  readonly worker: {
    readonly enabled: boolean;
    readonly concurrency: number;
    readonly pollIntervalMs: number;
    readonly handlerTimeoutMs: number;
    readonly retry: RetryPolicy;
    readonly shutdownGraceMs: number;
  };
}

/** Every problem found in a configuration, each naming the field and the fix. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

const PROVIDERS: readonly ProviderName[] = [
  "stripe",
  "github",
  "standard",
  "awardee",
  "shopify",
  "paddle",
  "slack",
  "generic",
];
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

/**
 * Validates a configuration and resolves its environment references; throws a {@link ConfigError} listing every
 * problem at once.
 *
 * @example
 * const config = resolveConfig(userConfig, process.env);
 */
export function resolveConfig(
  config: HookledgerConfig,
  environment: NodeJS.ProcessEnv = process.env,
): ResolvedConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  const read = <T extends string | number>(value: Configurable<T> | undefined): string | undefined => {
    if (!isEnvRef(value)) return value === undefined ? undefined : String(value);
    const resolved = environment[value.env];
    return resolved === undefined || resolved === "" ? undefined : resolved;
  };
  const positiveInt = (field: string, value: unknown, fallback: number): number => {
    if (value === undefined) return fallback;
    const n = typeof value === "string" ? Number(value) : value;
    if (typeof n === "number" && Number.isInteger(n) && n > 0) return n;
    problems.push(`${field}: expected a positive whole number, got ${JSON.stringify(value)}`);
    return fallback;
  };

  if (!Array.isArray(config.sources) || config.sources.length === 0) {
    problems.push(
      "sources: configure at least one source, e.g. { name: 'stripe', provider: 'stripe', secrets: [env('STRIPE_WEBHOOK_SECRET')] }",
    );
  }
  const seen = new Set<string>();
  const sources: Source[] = [];
  for (const [i, source] of (config.sources ?? []).entries()) {
    const at = `sources[${i}]`;
    if (typeof source.name !== "string" || !NAME.test(source.name)) {
      problems.push(
        `${at}.name: use 1-63 letters, digits, '-' or '_' (it is the URL segment), got ${JSON.stringify(source.name)}`,
      );
      continue;
    }
    if (seen.has(source.name))
      problems.push(`${at}.name: '${source.name}' is configured twice; source names must be unique`);
    seen.add(source.name);
    if (!PROVIDERS.includes(source.provider)) {
      problems.push(
        `${at}.provider: unknown provider ${JSON.stringify(source.provider)}; use one of ${PROVIDERS.join(", ")}`,
      );
      continue;
    }
    const secrets: string[] = [];
    if (!Array.isArray(source.secrets) || source.secrets.length === 0) {
      problems.push(`${at}.secrets: list at least one signing secret, e.g. [env('${envName(source.name)}')]`);
    }
    for (const [j, ref] of (source.secrets ?? []).entries()) {
      const secret = read(ref);
      if (secret === undefined || secret.trim() === "") {
        const fix = isEnvRef(ref)
          ? `set the environment variable ${ref.env}`
          : "write the secret or use env('NAME')";
        problems.push(`${at}.secrets[${j}]: the secret of source '${source.name}' is empty; ${fix}`);
      } else if (secret !== secret.trim()) {
        problems.push(
          `${at}.secrets[${j}]: the secret of source '${source.name}' has leading or trailing white space; remove it`,
        );
      } else if (source.provider === "standard" && standardSecretKey(secret) === null) {
        problems.push(
          `${at}.secrets[${j}]: a Standard Webhooks secret is base64, optionally prefixed 'whsec_'`,
        );
      } else {
        secrets.push(secret);
      }
    }
    const options = providerOptionChecks(at, source);
    problems.push(...options.problems);
    warnings.push(...options.warnings);
    // Unset, each provider applies its own documented window (Paddle 5 s, the others 300 s).
    const toleranceSeconds =
      source.toleranceSeconds === undefined
        ? undefined
        : positiveInt(`${at}.toleranceSeconds`, source.toleranceSeconds, 300);
    const maxBodyBytes = positiveInt(`${at}.maxBodyBytes`, source.maxBodyBytes, 1_048_576);
    if (options.problems.length > 0) continue;
    sources.push({
      name: source.name,
      provider: createProvider(source.provider, {
        ...(toleranceSeconds !== undefined && { toleranceSeconds }),
        ...(source.awardee && { awardee: source.awardee }),
        ...(source.generic && { generic: source.generic }),
      }),
      secrets,
      maxBodyBytes,
    });
  }

  // 0 asks the OS for a free port; the listening line then tells which.
  const portNumber = (value: string | undefined): number => {
    if (value === undefined) return 3000;
    const n = Number(value);
    if (Number.isInteger(n) && n >= 0 && n <= 65535) return n;
    problems.push(`port: expected 0-65535, got ${JSON.stringify(value)}; set PORT or the config's port`);
    return 3000;
  };
  const worker = config.worker ?? {};
  const retry = { ...defaultRetryPolicy, ...worker.retry };
  const resolved: ResolvedConfig = {
    databaseUrl: read(config.database?.url ?? { env: "DATABASE_URL" }),
    schema: config.database?.schema ?? environment.HOOKLEDGER_SCHEMA ?? "hookledger",
    embeddedPort: positiveInt(
      "database.embeddedPort",
      config.database?.embeddedPort ?? environment.HOOKLEDGER_EMBEDDED_PORT,
      54329,
    ),
    host: read(config.host ?? { env: "HOST" }) ?? "127.0.0.1",
    port: portNumber(read(config.port ?? { env: "PORT" })),
    sources,
    replayToken: read(config.replayToken ?? { env: "HOOKLEDGER_REPLAY_TOKEN" }),
    schedules: resolveSchedules(config.schedules, sources, environment, problems),
    warnings,
    handlers: config.handlers ?? new Handlers(),
    worker: {
      enabled: worker.enabled ?? true,
      concurrency: positiveInt("worker.concurrency", worker.concurrency, 4),
      pollIntervalMs: positiveInt("worker.pollIntervalMs", worker.pollIntervalMs, 1000),
      handlerTimeoutMs: positiveInt("worker.handlerTimeoutMs", worker.handlerTimeoutMs, 30_000),
      retry: {
        maxAttempts: positiveInt("worker.retry.maxAttempts", retry.maxAttempts, 10),
        baseDelayMs: positiveInt("worker.retry.baseDelayMs", retry.baseDelayMs, 1000),
        maxDelayMs: positiveInt("worker.retry.maxDelayMs", retry.maxDelayMs, 3_600_000),
      },
      shutdownGraceMs: positiveInt("worker.shutdownGraceMs", worker.shutdownGraceMs, 10_000),
    },
  };
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,50}$/.test(resolved.schema)) {
    problems.push(
      `database.schema: use letters, digits and '_' (starting with a letter), got ${JSON.stringify(resolved.schema)}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return resolved;
}

function envName(source: string): string {
  return `${source.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_WEBHOOK_SECRET`;
}
