import type { AlertDestination, AlertRules } from "../alerts/types.js";
import { standardSecretKey } from "../providers/standard.js";
import { durationMs } from "./duration.js";
import { type Configurable, ENV_REF_FIELDS, isEnvRef, readConfigurable } from "./env.js";
import type { FieldsOf } from "./fields.js";

/**
 * Alerts sent by hookledger itself (docs/monitoring.md, "Alerts"): rules measured on the ledger per source, sent to
 * a Slack incoming webhook and to URLs as Standard Webhooks, once when an alert fires and once when it resolves.
 * With at least one destination every rule is on, with the defaults below; `false` turns one off.
 *
 * @example
 * alerts: {
 *   slack: env("SLACK_ALERT_WEBHOOK_URL"),
 *   webhooks: [{ url: "https://ops.example.com/hooks/hookledger", secret: env("ALERT_WEBHOOK_SECRET") }],
 *   rules: { backlogAge: { over: "10m" }, signatureFailures: false },
 * }
 */
export interface AlertsConfig {
  /**
   * Time between two evaluations of the rules.
   * @defaultValue "30s"
   * @example every: "1m"
   */
  readonly every?: string;
  /**
   * A Slack incoming webhook URL (it holds its token: give it through the environment).
   * @example slack: env("SLACK_ALERT_WEBHOOK_URL")
   */
  readonly slack?: Configurable<string>;
  /**
   * URLs that get each message as a Standard Webhooks delivery, signed with their secret.
   * @example webhooks: [{ url: env("ALERT_WEBHOOK_URL"), secret: env("ALERT_WEBHOOK_SECRET") }]
   */
  readonly webhooks?: readonly AlertWebhookConfig[];
  /**
   * The rules, each per source; unnamed ones are on with their defaults.
   * @example rules: { failureRate: { over: 0.2, window: "15m" }, unhandled: false }
   */
  readonly rules?: AlertRulesConfig;
}

/**
 * A URL that gets alerts as Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
 *
 * @example
 * { url: "https://ops.example.com/hooks/hookledger", secret: env("ALERT_WEBHOOK_SECRET") }
 */
export interface AlertWebhookConfig {
  /**
   * An `http:` or `https:` URL.
   * @example url: env("ALERT_WEBHOOK_URL")
   */
  readonly url: Configurable<string>;
  /**
   * A Standard Webhooks secret: `whsec_` and base64 of at least 24 random bytes (the receiver verifies with it).
   * @example secret: env("ALERT_WEBHOOK_SECRET") // e.g. "whsec_" + openssl rand -base64 32
   */
  readonly secret: Configurable<string>;
}

/**
 * The rules of {@link AlertsConfig}; `false` turns one off. Windows and ages are durations such as `"15m"`.
 *
 * @example
 * rules: { deadLetters: { atLeast: 5 }, backlogAge: { over: "10m" }, failureRate: { over: 0.2, window: "15m", minEvents: 10 } }
 */
export interface AlertRulesConfig {
  /**
   * Dead events of a source now; resolves when they are requeued.
   * @defaultValue { atLeast: 1 }
   * @example deadLetters: { atLeast: 5 }
   */
  readonly deadLetters?: { readonly atLeast?: number } | false;
  /**
   * How long the longest-waiting due event of a source has been due (the worker's lag).
   * @defaultValue { over: "5m" }
   * @example backlogAge: { over: "10m" }
   */
  readonly backlogAge?: { readonly over?: string } | false;
  /**
   * The share of a source's events failing: events failed and awaiting a retry now, against those plus the events
   * settled in `window`; only once that sum reaches `minEvents`.
   * @defaultValue { over: 0.1, window: "15m", minEvents: 5 }
   * @example failureRate: { over: 0.2, window: "15m", minEvents: 10 }
   */
  readonly failureRate?:
    | { readonly over?: number; readonly window?: string; readonly minEvents?: number }
    | false;
  /**
   * Deliveries refused before the ledger (a bad or missing signature mostly; also malformed, too large, wrong
   * method or encoding), per minute over `window`.
   * @defaultValue { perMinute: 10, window: "10m" }
   * @example signatureFailures: { perMinute: 50 }
   */
  readonly signatureFailures?: { readonly perMinute?: number; readonly window?: string } | false;
  /**
   * Duplicates whose body differed from the first delivery's, in `window`.
   * @defaultValue { atLeast: 1, window: "1h" }
   * @example bodyMismatches: { atLeast: 3, window: "1h" }
   */
  readonly bodyMismatches?: { readonly atLeast?: number; readonly window?: string } | false;
  /**
   * Events settled `unhandled` (no handler for their source and type) in `window`.
   * @defaultValue { atLeast: 1, window: "1h" }
   * @example unhandled: false
   */
  readonly unhandled?: { readonly atLeast?: number; readonly window?: string } | false;
}

type Rule<K extends keyof AlertRulesConfig> = Exclude<NonNullable<AlertRulesConfig[K]>, false>;

const RULES_FIELDS = {
  deadLetters: { atLeast: true } satisfies FieldsOf<Rule<"deadLetters">>,
  backlogAge: { over: true } satisfies FieldsOf<Rule<"backlogAge">>,
  failureRate: { over: true, window: true, minEvents: true } satisfies FieldsOf<Rule<"failureRate">>,
  signatureFailures: { perMinute: true, window: true } satisfies FieldsOf<Rule<"signatureFailures">>,
  bodyMismatches: { atLeast: true, window: true } satisfies FieldsOf<Rule<"bodyMismatches">>,
  unhandled: { atLeast: true, window: true } satisfies FieldsOf<Rule<"unhandled">>,
} satisfies FieldsOf<AlertRulesConfig>;

/** The fields of {@link AlertsConfig} at every depth (see `unknownFields`). */
export const ALERTS_FIELDS = {
  every: true,
  slack: ENV_REF_FIELDS,
  webhooks: [{ url: ENV_REF_FIELDS, secret: ENV_REF_FIELDS } satisfies FieldsOf<AlertWebhookConfig>],
  rules: RULES_FIELDS,
} satisfies FieldsOf<AlertsConfig>;

/** Alerts with their durations in milliseconds and their destinations resolved. */
export interface ResolvedAlerts {
  readonly everyMs: number;
  /** Empty when the configuration names none, or (without `checkSecrets`) none is set. */
  readonly destinations: readonly AlertDestination[];
  readonly rules: AlertRules;
}

/**
 * Validates `alerts`, pushing each problem (field and fix) to `problems`; `undefined` without `alerts`. Without
 * `checkSecrets` (commands that send no alert), unset URLs and secrets are not problems: their destinations are
 * left out. A problem never quotes a URL or a secret.
 *
 * @example
 * const alerts = resolveAlerts(config.alerts, process.env, problems);
 */
export function resolveAlerts(
  config: AlertsConfig | undefined,
  environment: NodeJS.ProcessEnv,
  problems: string[],
  checkSecrets = true,
): ResolvedAlerts | undefined {
  if (config === undefined) return undefined;
  const duration = (field: string, text: unknown, fallback: string): number => {
    if (text === undefined) return durationMs(fallback) ?? 1;
    const ms = typeof text === "string" ? durationMs(text) : undefined;
    if (ms === undefined)
      problems.push(`${field}: ${JSON.stringify(text)} is not a duration; write e.g. 30s, 15m or 1h`);
    return ms ?? 1;
  };
  const count = (field: string, value: unknown, fallback: number): number => {
    if (value === undefined) return fallback;
    if (typeof value === "number" && Number.isInteger(value) && value > 0) return value;
    problems.push(`${field}: expected a whole number of at least 1, got ${JSON.stringify(value)}`);
    return fallback;
  };
  const destinations: AlertDestination[] = [];
  const url = (field: string, value: unknown, what: string): string | undefined => {
    const text = readConfigurable(value as Configurable<string> | undefined, environment);
    if (text === undefined) {
      if (checkSecrets) problems.push(`${field}: empty; ${fixOf(value, what)}`);
      return undefined;
    }
    if (!/^https?:$/.test(safeUrl(text)?.protocol ?? "")) {
      problems.push(`${field}: not an http: or https: URL (the value is not shown); ${fixOf(value, what)}`);
      return undefined;
    }
    return text;
  };
  if (config.slack !== undefined) {
    const slack = url("alerts.slack", config.slack, "the Slack incoming webhook's URL");
    if (slack) destinations.push({ kind: "slack", name: "slack", url: slack });
  }
  for (const [i, hook] of (config.webhooks ?? []).entries()) {
    const at = `alerts.webhooks[${i}]`;
    const target = url(`${at}.url`, hook?.url, "the URL that receives alerts");
    const secret = readConfigurable(hook?.secret, environment);
    if (secret === undefined) {
      if (checkSecrets)
        problems.push(`${at}.secret: empty; ${fixOf(hook?.secret, "a secret such as whsec_ and base64")}`);
    } else if (standardSecretKey(secret) === null) {
      problems.push(
        `${at}.secret: not a Standard Webhooks secret (the value is not shown); use whsec_ followed by base64, e.g. "whsec_" + the output of openssl rand -base64 32`,
      );
    }
    if (target && secret && standardSecretKey(secret)) {
      destinations.push({ kind: "webhook", name: `webhooks[${i}]`, url: target, secret });
    }
  }
  if (config.slack === undefined && (config.webhooks ?? []).length === 0) {
    problems.push(
      "alerts: no destination; add slack: env('SLACK_ALERT_WEBHOOK_URL') or webhooks: [{ url, secret }], or remove alerts",
    );
  }
  const rules = resolveRules(config.rules ?? {}, duration, count, problems);
  return { everyMs: duration("alerts.every", config.every, "30s"), destinations, rules };
}

function resolveRules(
  config: AlertRulesConfig,
  duration: (field: string, text: unknown, fallback: string) => number,
  count: (field: string, value: unknown, fallback: number) => number,
  problems: string[],
): AlertRules {
  const at = (rule: string) => `alerts.rules.${rule}`;
  const rules: { -readonly [K in keyof AlertRules]: AlertRules[K] } = {};
  const { deadLetters, backlogAge, failureRate, signatureFailures, bodyMismatches, unhandled } = config;
  if (deadLetters !== false)
    rules.deadLetters = { atLeast: count(`${at("deadLetters")}.atLeast`, deadLetters?.atLeast, 1) };
  if (backlogAge !== false)
    rules.backlogAge = { overMs: duration(`${at("backlogAge")}.over`, backlogAge?.over, "5m") };
  if (failureRate !== false) {
    const over = failureRate?.over ?? 0.1;
    if (typeof over !== "number" || !(over >= 0 && over < 1)) {
      problems.push(
        `${at("failureRate")}.over: a share from 0 up to (not including) 1, e.g. 0.2 for 20 %, got ${JSON.stringify(over)}`,
      );
    }
    rules.failureRate = {
      over,
      windowMs: duration(`${at("failureRate")}.window`, failureRate?.window, "15m"),
      minEvents: count(`${at("failureRate")}.minEvents`, failureRate?.minEvents, 5),
    };
  }
  if (signatureFailures !== false) {
    const perMinute = signatureFailures?.perMinute ?? 10;
    if (typeof perMinute !== "number" || !(perMinute > 0)) {
      problems.push(
        `${at("signatureFailures")}.perMinute: expected a number above 0, got ${JSON.stringify(perMinute)}`,
      );
    }
    rules.signatureFailures = {
      perMinute,
      windowMs: duration(`${at("signatureFailures")}.window`, signatureFailures?.window, "10m"),
    };
  }
  if (bodyMismatches !== false) {
    rules.bodyMismatches = {
      atLeast: count(`${at("bodyMismatches")}.atLeast`, bodyMismatches?.atLeast, 1),
      windowMs: duration(`${at("bodyMismatches")}.window`, bodyMismatches?.window, "1h"),
    };
  }
  if (unhandled !== false) {
    rules.unhandled = {
      atLeast: count(`${at("unhandled")}.atLeast`, unhandled?.atLeast, 1),
      windowMs: duration(`${at("unhandled")}.window`, unhandled?.window, "1h"),
    };
  }
  return rules;
}

function fixOf(value: unknown, what: string): string {
  return isEnvRef(value) ? `set the environment variable ${value.env} to ${what}` : `give ${what}`;
}

function safeUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
