import { BlockList, isIP } from "node:net";
import { defaultBreaker, defaultForwardRetry, type ResolvedForward } from "../forward/destination.js";
import { standardSecretKey } from "../providers/standard.js";
import type { RetryPolicy } from "../worker/backoff.js";
import { type Configurable, ENV_REF_FIELDS, isEnvRef, readConfigurable } from "./env.js";
import type { FieldsOf } from "./fields.js";

/**
 * A source's `forward`: where its verified, deduplicated events go, signed as Standard Webhooks with the provider's
 * bytes unchanged (docs/forwarding.md).
 *
 * @example
 * { name: "stripe", provider: "stripe", secrets: [env("STRIPE_WEBHOOK_SECRET")],
 *   forward: { url: "https://billing.internal/webhooks", secret: env("FORWARD_SECRET"), ordering: "entity" } }
 */
export interface ForwardConfig {
  /** The destination: an http:// or https:// URL. @example env("BILLING_WEBHOOK_URL") */
  readonly url: Configurable<string>;
  /**
   * The Standard Webhooks signing secret (`whsec_` and base64, at least 16 bytes: `whsec_$(openssl rand -base64 32)`),
   * or several during a rotation: each delivery carries one signature per secret.
   */
  readonly secret: Configurable<string> | readonly Configurable<string>[];
  /**
   * `"entity"`: one entity's events are delivered one at a time in version order, and an event older than one
   * already forwarded is skipped as stale (settled `stale`, not sent). `"none"`: every event, in any order.
   * @defaultValue "none"
   */
  readonly ordering?: "entity" | "none";
  /** An attempt without an answer by then fails and is retried. @defaultValue 15000 */
  readonly timeoutMs?: number;
  /** Refuse a destination that is not https://. @defaultValue false */
  readonly httpsOnly?: boolean;
  /** When set, the dialled address must lie in one of these CIDR ranges. @example ["10.0.0.0/8"] */
  readonly allow?: readonly string[];
  /** The dialled address must lie in none of these CIDR ranges (link-local and metadata are always refused). */
  readonly deny?: readonly string[];
  /**
   * Attempts before a delivery is dead, and the backoff between them (with jitter; `Retry-After` honoured up to 1 h).
   * @defaultValue { maxAttempts: 15, baseDelayMs: 5000, maxDelayMs: 3_600_000 }
   */
  readonly retry?: Partial<RetryPolicy>;
  /**
   * The circuit breaker: `threshold` failed attempts in a row, across the destination's events, pause it for
   * `pauseMs`, doubling with each further failure up to `maxPauseMs`; the next success closes it. Paused, its
   * deliveries are not taken, so they spend no attempts.
   * @defaultValue { threshold: 10, pauseMs: 30_000, maxPauseMs: 600_000 }
   * @example { threshold: 5, pauseMs: 5_000, maxPauseMs: 60_000 }
   */
  readonly breaker?: { readonly threshold?: number; readonly pauseMs?: number; readonly maxPauseMs?: number };
}

/** The fields of `forward` (see `unknownFields`). */
export const FORWARD_FIELDS = {
  url: ENV_REF_FIELDS,
  secret: ENV_REF_FIELDS,
  ordering: true,
  timeoutMs: true,
  httpsOnly: true,
  allow: true,
  deny: true,
  retry: { maxAttempts: true, baseDelayMs: true, maxDelayMs: true },
  breaker: { threshold: true, pauseMs: true, maxPauseMs: true },
} satisfies FieldsOf<ForwardConfig>;

const MIN_KEY_BYTES = 16;

function cidrList(at: string, value: unknown, problems: string[]): BlockList | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    problems.push(`${at}: expected a list of CIDR ranges such as ["10.0.0.0/8", "fd00::/8"]`);
    return undefined;
  }
  const list = new BlockList();
  for (const [i, entry] of value.entries()) {
    const [address = "", bits, extra] = typeof entry === "string" ? entry.split("/") : [];
    const family = isIP(address);
    const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits);
    if (
      family === 0 ||
      extra !== undefined ||
      !Number.isInteger(prefix) ||
      prefix < 0 ||
      prefix > (family === 4 ? 32 : 128)
    ) {
      problems.push(`${at}[${i}]: expected a CIDR range such as "10.0.0.0/8", got ${JSON.stringify(entry)}`);
      continue;
    }
    list.addSubnet(address, prefix, family === 4 ? "ipv4" : "ipv6");
  }
  return list;
}

/**
 * Checks one source's `forward`; every problem goes to `problems`, naming the field. Without `check` (commands that
 * send nothing) an unset secret is no problem.
 *
 * @example
 * const forward = resolveForward("sources[0].forward", "stripe", source.forward, process.env, true, problems);
 */
export function resolveForward(
  at: string,
  provider: string,
  forward: ForwardConfig,
  environment: NodeJS.ProcessEnv,
  check: boolean,
  problems: string[],
): ResolvedForward | undefined {
  const before = problems.length;
  const rawUrl = readConfigurable(forward.url, environment);
  let url: URL | undefined;
  try {
    url = rawUrl === undefined ? undefined : new URL(rawUrl);
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    problems.push(
      `${at}.url: expected an http:// or https:// URL, got ${JSON.stringify(rawUrl ?? forward.url)}`,
    );
  } else if (forward.httpsOnly === true && url.protocol !== "https:") {
    problems.push(`${at}.url: httpsOnly is set, so the destination must be https://, got ${url.protocol}//…`);
  }
  const refs = Array.isArray(forward.secret) ? forward.secret : [forward.secret];
  const keys: Buffer[] = [];
  for (const [j, ref] of refs.entries()) {
    const field = Array.isArray(forward.secret) ? `${at}.secret[${j}]` : `${at}.secret`;
    const secret = readConfigurable(ref as Configurable<string>, environment);
    if (secret === undefined || secret.trim() === "") {
      if (isEnvRef(ref) && ref.optional) continue;
      if (check) {
        const fix = isEnvRef(ref)
          ? `set the environment variable ${ref.env}`
          : "write the secret or use env('NAME')";
        problems.push(`${field}: the destination's signing secret is empty; ${fix}`);
      }
      continue;
    }
    const key = standardSecretKey(secret);
    if (key === null || key.length < MIN_KEY_BYTES) {
      problems.push(
        `${field}: a signing secret is 'whsec_' and at least ${MIN_KEY_BYTES} bytes of base64; make one with: echo whsec_$(openssl rand -base64 32)`,
      );
      continue;
    }
    keys.push(key);
  }
  if (check && keys.length === 0 && problems.length === before) {
    problems.push(`${at}.secret: give the destination's signing secret, e.g. env('FORWARD_SECRET')`);
  }
  const ordering = forward.ordering ?? "none";
  if (ordering !== "entity" && ordering !== "none") {
    problems.push(`${at}.ordering: expected "entity" or "none", got ${JSON.stringify(forward.ordering)}`);
  }
  const timeoutMs = forward.timeoutMs ?? 15_000;
  if (!(typeof timeoutMs === "number" && Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    problems.push(
      `${at}.timeoutMs: expected a positive number of milliseconds, got ${JSON.stringify(timeoutMs)}`,
    );
  }
  if (forward.httpsOnly !== undefined && typeof forward.httpsOnly !== "boolean") {
    problems.push(`${at}.httpsOnly: expected true or false, got ${JSON.stringify(forward.httpsOnly)}`);
  }
  const allow = cidrList(`${at}.allow`, forward.allow, problems);
  const deny = cidrList(`${at}.deny`, forward.deny, problems);
  const retry = { ...defaultForwardRetry, ...forward.retry };
  if (!Number.isInteger(retry.maxAttempts) || retry.maxAttempts < 1) {
    problems.push(`${at}.retry.maxAttempts: expected a positive whole number, got ${retry.maxAttempts}`);
  }
  const breaker = { ...defaultBreaker, ...forward.breaker };
  if (!Number.isInteger(breaker.threshold) || breaker.threshold < 1) {
    problems.push(`${at}.breaker.threshold: expected a positive whole number, got ${breaker.threshold}`);
  }
  for (const field of ["pauseMs", "maxPauseMs"] as const) {
    const ms = breaker[field];
    if (!(typeof ms === "number" && Number.isFinite(ms) && ms >= 0)) {
      problems.push(`${at}.breaker.${field}: expected a number of milliseconds, got ${JSON.stringify(ms)}`);
    }
  }
  if (problems.length > before || !url) return undefined;
  return {
    provider,
    url,
    keys,
    ordering,
    timeoutMs,
    rules: { ...(allow && { allow }), ...(deny && { deny }) },
    retry,
    breaker,
  };
}
