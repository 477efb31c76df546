/** A reference to an environment variable, resolved when the configuration is validated. */
export interface EnvRef {
  readonly env: string;
}

/**
 * Refers to an environment variable instead of writing a secret into the config file.
 *
 * @example
 * secrets: [env("STRIPE_WEBHOOK_SECRET"), env("STRIPE_WEBHOOK_SECRET_OLD")]
 */
export function env(name: string): EnvRef {
  return { env: name };
}

/** A value written inline or taken from the environment. */
export type Configurable<T extends string | number> = T | EnvRef;

/** Tells an {@link EnvRef} from an inline value. */
export function isEnvRef(value: unknown): value is EnvRef {
  return typeof value === "object" && value !== null && typeof (value as EnvRef).env === "string";
}
