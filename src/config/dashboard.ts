import { type Configurable, isEnvRef, readConfigurable } from "./env.js";

/**
 * The dashboard's settings with every token read.
 *
 * @example
 * const { enabled, users }: ResolvedDashboard = resolveConfig(config).dashboard;
 */
export interface ResolvedDashboard {
  readonly enabled: boolean;
  readonly users: readonly { readonly name: string; readonly token: string }[];
}

// Shorter tokens fall to guessing, ten a minute per address being a limit, not a wall (docs/dashboard.md, "Access").
const MIN_TOKEN = 16;
const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,62}$/;

/**
 * Checks `dashboard` and reads its tokens, pushing each problem (field and fix) to `problems`. A user whose token is
 * an `env.optional(…)` left unset is left out (any unset token, without `checkTokens`: commands that serve no
 * dashboard); `HOOKLEDGER_DASHBOARD_TOKEN` adds the user `admin`.
 *
 * @example
 * const dashboard = resolveDashboard(config.dashboard, process.env, problems);
 */
export function resolveDashboard(
  config: { users?: readonly { name: string; token: Configurable<string> }[]; enabled?: boolean } | undefined,
  environment: NodeJS.ProcessEnv,
  problems: string[],
  checkTokens = true,
): ResolvedDashboard {
  const users: { name: string; token: string }[] = [];
  const add = (field: string, name: unknown, token: string | undefined) => {
    if (typeof name !== "string" || !NAME.test(name)) {
      problems.push(
        `${field}.name: use 1-63 letters, digits, spaces or . _ @ -, got ${JSON.stringify(name)}`,
      );
      return;
    }
    if (token === undefined) return;
    if (token.length < MIN_TOKEN) {
      problems.push(
        `${field}.token: at least ${MIN_TOKEN} characters (got ${token.length}); generate one with \`openssl rand -hex 24\``,
      );
      return;
    }
    if (users.some((u) => u.name === name)) {
      problems.push(`${field}.name: '${name}' is configured twice; each user needs a name of its own`);
      return;
    }
    users.push({ name, token });
  };
  for (const [i, user] of (config?.users ?? []).entries()) {
    const token = readConfigurable(user?.token, environment);
    const ref = user?.token;
    if (token === undefined && checkTokens && !(isEnvRef(ref) && ref.optional)) {
      const what = isEnvRef(ref) ? `the variable ${ref.env} is unset or empty` : "it is missing";
      problems.push(
        `dashboard.users[${i}].token: ${what}; set it, or use env.optional(…) to leave the user out`,
      );
      continue;
    }
    add(`dashboard.users[${i}]`, user?.name, token);
  }
  const fromEnv = environment.HOOKLEDGER_DASHBOARD_TOKEN;
  if (fromEnv) add("HOOKLEDGER_DASHBOARD_TOKEN (environment): the user 'admin'", "admin", fromEnv);
  return { enabled: config?.enabled ?? true, users };
}
