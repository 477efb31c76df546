import type { FieldsOf } from "./fields.js";

/** A reference to an environment variable, resolved when the configuration is validated. */
export interface EnvRef {
  readonly env: string;
  /** Unset or empty means "not given" instead of a problem (see {@link env.optional}). */
  readonly optional?: true;
}

/** {@link env} and {@link Env.optional}: references to environment variables in a config file. */
export interface Env {
  /**
   * Refers to an environment variable instead of writing a secret into the config file. Unset or empty, the value
   * is missing: a secret or a `database.url` written this way then refuses to start, naming the variable.
   *
   * @example
   * secrets: [env("STRIPE_WEBHOOK_SECRET")]
   */
  (name: string): EnvRef;
  /**
   * Refers to an environment variable that may be unset: an unset or empty secret is left out of the source's
   * list (a source still needs one secret that is set), and an unset `database.url` means the embedded database.
   * Use it for the old secret of a rotation, which you unset once the provider signs with the new one.
   *
   * @example
   * secrets: [env("STRIPE_WEBHOOK_SECRET"), env.optional("STRIPE_WEBHOOK_SECRET_OLD")]
   */
  optional(name: string): EnvRef;
}

/**
 * Refers to an environment variable instead of writing a secret into the config file; `env.optional(name)` for
 * one that may be unset.
 *
 * @example
 * secrets: [env("STRIPE_WEBHOOK_SECRET"), env.optional("STRIPE_WEBHOOK_SECRET_OLD")]
 */
export const env: Env = Object.assign((name: string): EnvRef => ({ env: name }), {
  optional: (name: string): EnvRef => ({ env: name, optional: true as const }),
});

/** The fields of an {@link EnvRef}, for a value that may be written `env(…)` (a misspelt `optinal` is refused). */
export const ENV_REF_FIELDS = { env: true, optional: true } satisfies FieldsOf<EnvRef>;

/** A value written inline or taken from the environment. */
export type Configurable<T extends string | number> = T | EnvRef;

/** Tells an {@link EnvRef} from an inline value. */
export function isEnvRef(value: unknown): value is EnvRef {
  return typeof value === "object" && value !== null && typeof (value as EnvRef).env === "string";
}

/**
 * Reads a value written inline or as an {@link EnvRef}; an unset or empty variable reads as `undefined`.
 *
 * @example
 * readConfigurable(env("PORT"), { PORT: "8080" }); // "8080"
 */
export function readConfigurable(
  value: Configurable<string | number> | undefined,
  environment: NodeJS.ProcessEnv,
): string | undefined {
  if (!isEnvRef(value)) return value === undefined ? undefined : String(value);
  const resolved = environment[value.env];
  return resolved === undefined || resolved === "" ? undefined : resolved;
}
