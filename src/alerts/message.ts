import type { AlertData, AlertKind, AlertRuleName } from "./types.js";

const number = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
const percent = (ratio: number) => `${Math.round(ratio * 1000) / 10} %`;

// What each rule's value means, in a line a person reads in a Slack channel.
const DESCRIBE: Readonly<Record<AlertRuleName, (value: number, threshold: number) => string>> = {
  deadLetters: (v, t) => `${number(v)} dead events (alert at ${number(t)})`,
  backlogAge: (v, t) => `the oldest due event has waited ${Math.round(v)} s (alert over ${number(t)} s)`,
  failureRate: (v, t) => `${percent(v)} of events failing (alert over ${percent(t)})`,
  signatureFailures: (v, t) => `${number(v)} refused deliveries per minute (alert at ${number(t)})`,
  bodyMismatches: (v, t) => `${number(v)} duplicates with a different body (alert at ${number(t)})`,
  unhandled: (v, t) => `${number(v)} events settled with no handler (alert at ${number(t)})`,
};

/**
 * One line saying what a message's measurement means.
 *
 * @example
 * alertSummary({ rule: "deadLetters", source: "stripe", value: 3, threshold: 1, since: "…", episode: 1 });
 * // "3 dead events (alert at 1)"
 */
export function alertSummary(data: AlertData): string {
  return DESCRIBE[data.rule]?.(data.value, data.threshold) ?? `${data.value} (threshold ${data.threshold})`;
}

/**
 * The JSON body of a Slack incoming webhook message.
 *
 * @example
 * const body = slackMessage("firing", data); // { text: ":rotating_light: hookledger: deadLetters firing for stripe: …" }
 */
export function slackMessage(kind: AlertKind, data: AlertData): { text: string } {
  const head =
    kind === "firing"
      ? `:rotating_light: hookledger: *${data.rule}* firing for source \`${data.source}\``
      : `:white_check_mark: hookledger: *${data.rule}* resolved for source \`${data.source}\``;
  return {
    text: `${head}: ${alertSummary(data)}; ${kind === "firing" ? "since" : "cleared at"} ${data.since}`,
  };
}

/**
 * The body sent to a webhook destination, Standard Webhooks' shape: `type`, `timestamp` (when the transition was
 * recorded) and `data` (the measurement, plus `summary`).
 *
 * @example
 * const body = webhookMessage("resolved", data, new Date()); // { type: "alert.resolved", timestamp: "…", data: { … } }
 */
export function webhookMessage(kind: AlertKind, data: AlertData, createdAt: Date) {
  return {
    type: `alert.${kind}`,
    timestamp: createdAt.toISOString(),
    data: { ...data, summary: alertSummary(data) },
  };
}

/**
 * The `webhook-id` of a message: the same for every attempt, so a receiver can drop a second copy.
 *
 * @example
 * alertMessageId({ source: "stripe", rule: "deadLetters", episode: 2, kind: "firing" }); // "alert_stripe_deadLetters_2_firing"
 */
export function alertMessageId(m: {
  source: string;
  rule: string;
  episode: number;
  kind: AlertKind;
}): string {
  return `alert_${m.source}_${m.rule}_${m.episode}_${m.kind}`;
}
