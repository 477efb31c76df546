import assert from "node:assert/strict";
import { test } from "node:test";
import { type AlertsConfig, env, type HookledgerConfig, resolveConfig } from "hookledger";
import { problemsOf } from "../helpers/config.js";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SLACK_URL = "https://hooks.slack.com/services/T000/B000/XXXXsecrettoken";
const withAlerts = (alerts: AlertsConfig): HookledgerConfig => ({
  sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
  alerts,
});

test("resolveConfig(alerts with one destination) turns every rule on with its documented defaults", () => {
  const { alerts } = resolveConfig(withAlerts({ slack: env("SLACK_ALERT_WEBHOOK_URL") }), {
    SLACK_ALERT_WEBHOOK_URL: SLACK_URL,
  });
  assert.equal(alerts?.everyMs, 30_000);
  assert.deepEqual(alerts?.destinations, [{ kind: "slack", name: "slack", url: SLACK_URL }]);
  assert.deepEqual(alerts?.rules, {
    deadLetters: { atLeast: 1 },
    backlogAge: { overMs: 300_000 },
    failureRate: { over: 0.1, windowMs: 900_000, minEvents: 5 },
    signatureFailures: { perMinute: 10, windowMs: 600_000 },
    bodyMismatches: { atLeast: 1, windowMs: 3_600_000 },
    unhandled: { atLeast: 1, windowMs: 3_600_000 },
  });
});

test("resolveConfig(alerts.rules) takes thresholds, and false turns a rule off", () => {
  const { alerts } = resolveConfig(
    withAlerts({
      every: "1m",
      webhooks: [{ url: "https://ops.example.com/alerts", secret: env("ALERT_SECRET") }],
      rules: { backlogAge: { over: "10m" }, failureRate: { over: 0.2, window: "1h" }, unhandled: false },
    }),
    { ALERT_SECRET: SECRET },
  );
  assert.equal(alerts?.everyMs, 60_000);
  assert.deepEqual(alerts?.destinations, [
    { kind: "webhook", name: "webhooks[0]", url: "https://ops.example.com/alerts", secret: SECRET },
  ]);
  assert.deepEqual(alerts?.rules.backlogAge, { overMs: 600_000 });
  assert.deepEqual(alerts?.rules.failureRate, { over: 0.2, windowMs: 3_600_000, minEvents: 5 });
  assert.equal(alerts?.rules.unhandled, undefined);
});

test("resolveConfig refuses an unset alert URL or secret, naming the field and the variable to set", () => {
  const problems = problemsOf(
    withAlerts({
      slack: env("SLACK_ALERT_WEBHOOK_URL"),
      webhooks: [{ url: env("ALERT_URL"), secret: env("ALERT_SECRET") }],
    }),
  );
  assert.deepEqual(problems, [
    "alerts.slack: empty; set the environment variable SLACK_ALERT_WEBHOOK_URL to the Slack incoming webhook's URL",
    "alerts.webhooks[0].url: empty; set the environment variable ALERT_URL to the URL that receives alerts",
    "alerts.webhooks[0].secret: empty; set the environment variable ALERT_SECRET to a secret such as whsec_ and base64",
  ]);
});

test("resolveConfig(…, { secrets: false }) accepts unset alert URLs and secrets and leaves those destinations out", () => {
  const config = resolveConfig(
    withAlerts({
      slack: env("SLACK_ALERT_WEBHOOK_URL"),
      webhooks: [{ url: env("ALERT_URL"), secret: env("S") }],
    }),
    {},
    { secrets: false },
  );
  assert.deepEqual(config.alerts?.destinations, []);
});

test("resolveConfig refuses a URL that is not http(s) and a secret that is not whsec_ base64, quoting neither", () => {
  const badSecret = "whsec_not base64 at all!";
  const problems = problemsOf(
    withAlerts({ slack: env("SLACK"), webhooks: [{ url: "ftp://files.example.com/x", secret: env("S") }] }),
    { SLACK: "hooks.slack.com/services/T000/B000/XXXXsecrettoken", S: badSecret },
  );
  assert.equal(problems.length, 3);
  assert.match(
    problems[0] ?? "",
    /^alerts\.slack: not an http: or https: URL .*set the environment variable SLACK/,
  );
  assert.match(problems[1] ?? "", /^alerts\.webhooks\[0\]\.url: not an http: or https: URL/);
  assert.match(problems[2] ?? "", /^alerts\.webhooks\[0\]\.secret: not a Standard Webhooks secret.*whsec_/);
  const all = problems.join("\n");
  assert.ok(
    !all.includes("secrettoken") && !all.includes("files.example.com") && !all.includes("base64 at all"),
  );
});

test("resolveConfig refuses alerts without a destination, a misspelt rule, a bad duration and a bad threshold", () => {
  const problems = problemsOf(
    withAlerts({
      every: "30 seconds",
      rules: {
        backlogAge: { over: "ten minutes" },
        failureRate: { over: 20 },
        deadLetters: { atLeast: 0 },
        ...({ deadletter: {} } as object),
      },
    }),
  );
  assert.deepEqual(problems, [
    "config.alerts.rules.deadletter: unknown field; did you mean deadLetters?",
    "alerts: no destination; add slack: env('SLACK_ALERT_WEBHOOK_URL') or webhooks: [{ url, secret }], or remove alerts",
    "alerts.rules.deadLetters.atLeast: expected a whole number of at least 1, got 0",
    'alerts.rules.backlogAge.over: "ten minutes" is not a duration; write e.g. 30s, 15m or 1h',
    "alerts.rules.failureRate.over: a share from 0 up to (not including) 1, e.g. 0.2 for 20 %, got 20",
    'alerts.every: "30 seconds" is not a duration; write e.g. 30s, 15m or 1h',
  ]);
});

test("resolveConfig(…, { alerts: false }) checks the sources' secrets but not the alerts' URLs (hookledger send)", () => {
  const config = withAlerts({ slack: env("SLACK_ALERT_WEBHOOK_URL") });
  assert.deepEqual(resolveConfig(config, {}, { alerts: false }).alerts?.destinations, []);
  assert.throws(
    () =>
      resolveConfig(
        { ...config, sources: [{ name: "s", provider: "stripe", secrets: [env("S")] }] },
        {},
        { alerts: false },
      ),
    /sources\[0\]\.secrets\[0\]/,
  );
});
