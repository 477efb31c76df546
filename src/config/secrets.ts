import { standardSecretKey } from "../providers/standard.js";
import { isEnvRef, readConfigurable } from "./env.js";
import type { SourceConfig } from "./types.js";

/**
 * Resolves a source's signing secrets. With `check`, every problem (an empty secret, white space, a Standard
 * Webhooks secret that is not base64, no secret at all) goes to `problems`; `env.optional` entries that are unset
 * are left out. Without `check` (commands that verify nothing), the secrets that are set are returned as they are.
 *
 * @example
 * const secrets = resolveSecrets("sources[0]", source, process.env, true, problems);
 */
export function resolveSecrets(
  at: string,
  source: SourceConfig,
  environment: NodeJS.ProcessEnv,
  check: boolean,
  problems: string[],
): string[] {
  const refs = Array.isArray(source.secrets) ? source.secrets : [];
  const secrets: string[] = [];
  const localProblems: string[] = [];
  for (const [j, ref] of refs.entries()) {
    const secret = readConfigurable(ref, environment);
    if (secret === undefined || secret.trim() === "") {
      if (isEnvRef(ref) && ref.optional) continue;
      // A secret after the first is usually a rotation's old one, which may rightly be unset.
      const fix = !isEnvRef(ref)
        ? "write the secret or use env('NAME')"
        : `set the environment variable ${ref.env}${j > 0 ? ` (or write env.optional('${ref.env}') if it may be unset)` : ""}`;
      localProblems.push(`${at}.secrets[${j}]: the secret of source '${source.name}' is empty; ${fix}`);
    } else if (secret !== secret.trim()) {
      localProblems.push(
        `${at}.secrets[${j}]: the secret of source '${source.name}' has leading or trailing white space; remove it`,
      );
    } else if (source.provider === "standard" && standardSecretKey(secret) === null) {
      localProblems.push(
        `${at}.secrets[${j}]: a Standard Webhooks secret is base64, optionally prefixed 'whsec_'`,
      );
    } else {
      secrets.push(secret);
    }
  }
  if (!check) return secrets;
  problems.push(...localProblems);
  if (refs.length === 0) {
    problems.push(`${at}.secrets: list at least one signing secret, e.g. [env('${envName(source.name)}')]`);
  } else if (secrets.length === 0 && localProblems.length === 0) {
    const names = refs.map((ref) => (isEnvRef(ref) ? ref.env : "?")).join(", ");
    problems.push(
      `${at}.secrets: no secret of source '${source.name}' is set (${names}); set one to verify its deliveries`,
    );
  }
  return secrets;
}

function envName(source: string): string {
  return `${source.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_WEBHOOK_SECRET`;
}
