/**
 * Terminology of alerts (docs/monitoring.md, "Alerts"):
 * - **rule**: a condition on the ledger, measured per source (`deadLetters`, `backlogAge`, …).
 * - **instance**: one rule for one source; it is firing or clear.
 * - **episode**: one stretch of firing of an instance, from its firing message to its resolved message.
 * - **destination**: where messages go: the Slack incoming webhook, or a URL that gets Standard Webhooks.
 */

/** The rules alerts evaluate, each per source. */
export type AlertRuleName =
  | "deadLetters"
  | "backlogAge"
  | "failureRate"
  | "signatureFailures"
  | "bodyMismatches"
  | "unhandled";

/** Every rule, in the order they are evaluated and documented. */
export const ALERT_RULES: readonly AlertRuleName[] = [
  "deadLetters",
  "backlogAge",
  "failureRate",
  "signatureFailures",
  "bodyMismatches",
  "unhandled",
];

/**
 * The rules with their thresholds; a rule left out is not evaluated. Windows are in milliseconds.
 *
 * @example
 * const rules: AlertRules = { deadLetters: { atLeast: 1 }, backlogAge: { overMs: 600_000 } };
 */
export interface AlertRules {
  /** Dead events of a source now: fires at `atLeast`, clears when they are requeued (or fewer remain). */
  readonly deadLetters?: { readonly atLeast: number };
  /** How long the longest-waiting due event of a source has been due. */
  readonly backlogAge?: { readonly overMs: number };
  /** Failing events (failed and awaiting a retry, or dead) against those plus the events settled in the window. */
  readonly failureRate?: { readonly over: number; readonly windowMs: number; readonly minEvents: number };
  /** Refused deliveries (signature, malformed, method, size, encoding) per minute, averaged over the window. */
  readonly signatureFailures?: { readonly perMinute: number; readonly windowMs: number };
  /** Duplicates whose body differed from the first delivery's, in the window. */
  readonly bodyMismatches?: { readonly atLeast: number; readonly windowMs: number };
  /** Events settled `unhandled` (no handler for their type) in the window. */
  readonly unhandled?: { readonly atLeast: number; readonly windowMs: number };
}

/**
 * Where alert messages go. `name` (`slack`, `webhooks[0]`) is what logs and the ledger show: never the URL, which
 * holds a token for Slack.
 *
 * @example
 * const slack: AlertDestination = { kind: "slack", name: "slack", url: process.env.SLACK_ALERT_WEBHOOK_URL ?? "" };
 */
export type AlertDestination =
  | { readonly kind: "slack"; readonly name: string; readonly url: string }
  | {
      readonly kind: "webhook";
      readonly name: string;
      readonly url: string;
      /** The Standard Webhooks secret (`whsec_` and base64); its decoded bytes are the HMAC key. */
      readonly secret: string;
    };

/** A message's kind: an episode begins, or it ends. */
export type AlertKind = "firing" | "resolved";

/**
 * What one message says, as stored with it and sent in a webhook's `data`.
 *
 * @example
 * const data: AlertData = { rule: "deadLetters", source: "stripe", value: 3, threshold: 1, since: "2024-05-01T12:00:00.000Z", episode: 1 };
 */
export interface AlertData {
  readonly rule: AlertRuleName;
  readonly source: string;
  /** The measured value at the transition (for `resolved`, the value that cleared it). */
  readonly value: number;
  readonly threshold: number;
  /** When the episode began (firing) or ended (resolved), ISO 8601. */
  readonly since: string;
  /** The episode's number for this rule and source, 1 upwards: a firing and its resolved message share it. */
  readonly episode: number;
}
