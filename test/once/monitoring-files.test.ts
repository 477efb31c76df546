// deploy/prometheus/hookledger-alerts.yml and deploy/grafana/hookledger-dashboard.json: their structure, and every
// metric and label their PromQL names checked against what a real `hookledger serve` on Postgres exports on its
// admin /metrics after real deliveries (accepted, duplicate, refused, mismatched, unhandled, failed and dead).
// With promtool installed (Debian package prometheus), `promtool check rules` and `promtool test rules` run too.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { signDelivery } from "hookledger/testing";
import { parse as parseYaml } from "yaml";
import { cleanupAfter, type RunningCli, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl } from "../helpers/db.js";
import { type Scrape, parseScrape, problemsOf, readPromql } from "../helpers/promql.js";

const ALERTS = "deploy/prometheus/hookledger-alerts.yml";
const ALERT_TESTS = "deploy/prometheus/hookledger-alerts.test.yml";
const DASHBOARD = "deploy/grafana/hookledger-dashboard.json";

// ---------------------------------------------------------------------------------------------------------------
// The files.

interface Rule {
  readonly alert?: unknown;
  readonly expr?: unknown;
  readonly for?: unknown;
  readonly labels?: { readonly severity?: unknown };
  readonly annotations?: { readonly summary?: unknown; readonly description?: unknown };
}
const rulesFile = parseYaml(readFileSync(ALERTS, "utf8")) as {
  groups?: { name?: unknown; rules?: Rule[] }[];
};
const rules = (rulesFile.groups ?? []).flatMap((g) => g.rules ?? []);

interface Target {
  readonly expr?: unknown;
  readonly refId?: unknown;
}
interface Panel {
  readonly id?: unknown;
  readonly type?: unknown;
  readonly title?: unknown;
  readonly gridPos?: { h?: unknown; w?: unknown; x?: unknown; y?: unknown };
  readonly datasource?: { type?: unknown; uid?: unknown };
  readonly targets?: Target[];
}
interface Variable {
  readonly name?: unknown;
  readonly type?: unknown;
  readonly query?: unknown;
  readonly definition?: unknown;
}
const dashboardText = readFileSync(DASHBOARD, "utf8");
const dashboard = JSON.parse(dashboardText) as {
  uid?: unknown;
  title?: unknown;
  schemaVersion?: unknown;
  panels?: Panel[];
  templating?: { list?: Variable[] };
};
const panels = dashboard.panels ?? [];
const variables = dashboard.templating?.list ?? [];
const sourceVariable = variables.find((v) => v.name === "source");
const labelValuesQuery = (v: Variable | undefined) =>
  typeof v?.query === "string" ? v.query : (v?.query as { query?: string } | undefined)?.query;

// ---------------------------------------------------------------------------------------------------------------
// The service: the demo's sources and secrets (so `hookledger send` posts the demo's deliveries), handlers for some
// of the demo's types, one that always fails, one whose outbox message is refused for good, two attempts before an
// event is dead, and a quick poll.

const { dirs, schemas } = cleanupAfter();
const DEMO_STRIPE_SECRET = "whsec_hookledger_demo_only_stripe";
const CONFIG = `import { Handlers, Outbox, SendError } from "hookledger";
const advance = async (ctx) => {
  await ctx.advance();
};
export default {
  sources: [
    { name: "stripe", provider: "stripe", secrets: [${JSON.stringify(DEMO_STRIPE_SECRET)}] },
    { name: "github", provider: "github", secrets: ["hookledger-demo-only-github"] },
  ],
  handlers: new Handlers()
    .on("stripe", "customer.subscription.created", advance)
    .on("stripe", "customer.subscription.updated", advance)
    .on("github", "push", () => {})
    .on("stripe", "charge.failed", () => {
      throw new Error("the monitoring test's handler always fails");
    })
    .on("stripe", "charge.refunded", (ctx) => ctx.outbox.send("refund", {}).then(() => {})),
  outbox: new Outbox({ pollIntervalMs: 100 }).on("refund", () => {
    throw new SendError("the monitoring test's refund is refused", { permanent: true });
  }),
  worker: { pollIntervalMs: 100, retry: { maxAttempts: 2, baseDelayMs: 100, maxDelayMs: 200 } },
};
`;

let serve: RunningCli | undefined;
let scrapeText = "";
let scrape: Scrape;

before(
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "hookledger-monitoring-"));
    dirs.push(dir);
    // The config imports "hookledger" as an app does: from its node_modules, here a link to this package.
    await mkdir(join(dir, "node_modules"));
    await symlink(resolve("."), join(dir, "node_modules", "hookledger"), "dir");
    await writeFile(join(dir, "monitoring.config.mjs"), CONFIG);
    const schema = `monitoring_${randomBytes(4).toString("hex")}`;
    schemas.push(schema);
    const env = { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema, PORT: "0" };
    serve = startCli(["serve", "--config", join(dir, "monitoring.config.mjs")], { env });
    const [, url = ""] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m);
    const [, admin = ""] = await serve.waitForLine(/^hookledger admin on (http:\/\/\S+)$/m);

    // The demo's deliveries: accepted, a duplicate, an out-of-order (stale) update and a GitHub push. Without
    // DATABASE_URL, send posts them and does not read the demo's tables (this config has none).
    const { DATABASE_URL: _, ...sendEnv } = process.env;
    const sent = await runCli(["send", "--url", url], { env: sendEnv, cwd: dir });
    assert.equal(sent.code, 0, sent.stdout + sent.stderr);

    const post = async (body: string, headers: Record<string, string>) =>
      (await fetch(`${url}/webhooks/stripe`, { method: "POST", headers, body })).status;
    const stripe = (id: string, type: string, extra: object = {}) => {
      const body = JSON.stringify({
        id,
        object: "event",
        type,
        created: 1767225600,
        data: { object: extra },
      });
      return {
        body,
        headers: signDelivery({ provider: "stripe", secret: DEMO_STRIPE_SECRET, body }).headers,
      };
    };
    const run = randomBytes(4).toString("hex");
    const unhandled = stripe(`evt_${run}_unhandled`, "invoice.paid");
    assert.equal(await post(unhandled.body, unhandled.headers), 200, "no handler: settled as unhandled");
    assert.equal(
      await post(unhandled.body, unhandled.headers),
      200,
      "the same again: a duplicate from the cache",
    );
    const mismatch = stripe(`evt_${run}_unhandled`, "invoice.paid", { amount_paid: 1 });
    assert.equal(await post(mismatch.body, mismatch.headers), 200, "the same id, another body: a mismatch");
    const failing = stripe(`evt_${run}_failing`, "charge.failed");
    assert.equal(await post(failing.body, failing.headers), 200, "fails, then dead at its second attempt");
    const refunded = stripe(`evt_${run}_refunded`, "charge.refunded");
    assert.equal(await post(refunded.body, refunded.headers), 200, "applies; its outbox message goes dead");
    const forged = stripe(`evt_${run}_forged`, "invoice.paid");
    assert.equal(
      await post(forged.body.replace("invoice", "INVOICE"), forged.headers),
      401,
      "a changed body",
    );

    // Scrape until the worker has run everything: the dead letter comes last.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const response = await fetch(`${admin}/metrics`);
      assert.equal(response.status, 200);
      scrapeText = await response.text();
      const done = [
        /^hookledger_dead_letters_total\{/m,
        /outcome="unhandled"/,
        /^hookledger_outbox_dead_total\{/m,
      ];
      if (done.every((pattern) => pattern.test(scrapeText))) break;
      assert.ok(Date.now() < deadline, `the worker did not settle the test's events in 30 s:\n${scrapeText}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    scrape = parseScrape(scrapeText);
  },
  { timeout: 120_000 },
);

after(async () => {
  if (serve) assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
});

// ---------------------------------------------------------------------------------------------------------------

test("the scrape has a sample of every series the files rely on", () => {
  // Without these, the label checks below would have nothing to check against.
  for (const pattern of [
    /^hookledger_deliveries_total\{source="stripe",result="accepted"\} [1-9]/m,
    /^hookledger_deliveries_total\{source="stripe",result="duplicate"\} [1-9]/m,
    /^hookledger_deliveries_total\{source="stripe",result="unauthorized"\} 1$/m,
    /^hookledger_verification_failures_total\{source="stripe",reason="\w+"\} 1$/m,
    /^hookledger_duplicate_cache_hits_total\{source="stripe"\} [1-9]/m,
    /^hookledger_duplicate_body_mismatches_total\{source="stripe"\} 1$/m,
    /^hookledger_attempts_total\{[^}]*result="settled",outcome="unhandled"\} 1$/m,
    /^hookledger_attempts_total\{[^}]*result="settled",outcome="applied"\} [1-9]/m,
    /^hookledger_attempts_total\{source="stripe",type="charge.failed",result="failed"\} 1$/m,
    /^hookledger_attempts_total\{source="stripe",type="charge.failed",result="dead"\} 1$/m,
    /^hookledger_dead_letters_total\{source="stripe",type="charge.failed"\} 1$/m,
    /^hookledger_claim_duration_seconds_bucket\{le="[^"]+",source="stripe",result="accepted"\}/m,
    /^hookledger_attempt_duration_seconds_bucket\{le="[^"]+",source="stripe",result="settled"\}/m,
    /^hookledger_backlog_due_events \d+$/m,
    /^hookledger_backlog_oldest_due_seconds [\d.e+-]+$/m,
    /^hookledger_backlog_up 1$/m,
    /^hookledger_outbox_sends_total\{sender="refund",result="dead"\} 1$/m,
    /^hookledger_outbox_dead_total\{sender="refund"\} 1$/m,
  ]) {
    assert.match(scrapeText, pattern);
  }
});

test("the PromQL reader finds metrics, selector labels and by-labels, and nothing else", () => {
  const use = readPromql(
    `histogram_quantile(0.99, sum by (le, source) (rate(a_bucket{source=~"$source", result="x|y"}[$__rate_interval])))
     / on (source) group_left sum (increase(b_total[15m] offset 1h)) by (type) > bool 0.5
     or absent(c) unless d{reason!="by (sum)"} # e{f="g"}`,
  );
  assert.deepEqual(
    use.references.map((r) => [r.metric, r.matchers.map((m) => `${m.label}${m.op}${m.value}`)]),
    [
      ["a_bucket", ["source=~$source", "result=x|y"]],
      ["b_total", []],
      ["c", []],
      ["d", ["reason!=by (sum)"]],
    ],
  );
  assert.deepEqual(
    use.groupings.map((g) => [g.keyword, g.labels, g.metrics]),
    [
      ["by", ["le", "source"], ["a_bucket"]],
      ["on", ["source"], ["a_bucket", "b_total", "c", "d"]],
      ["by", ["type"], ["b_total"]],
    ],
  );
  assert.throws(() => readPromql("sum(rat(a[5m]))"), /unknown PromQL function rat/);
  assert.throws(() => readPromql('{__name__="a"}'), /a selector without a metric name/);
});

test("the checks against the scrape catch a wrong metric, label, by-label and result value", () => {
  assert.deepEqual(problemsOf(scrape, "sum by (source) (rate(hookledger_deliveries_total[5m]))"), []);
  assert.deepEqual(problemsOf(scrape, "rate(hookledger_claim_duration_seconds_bucket[5m])"), []);
  assert.deepEqual(problemsOf(scrape, "rate(hookledger_delivery_total[5m])"), [
    "hookledger_delivery_total is not exported",
  ]);
  // A counter has no _count series; only a histogram's suffixes name its family.
  assert.deepEqual(problemsOf(scrape, "hookledger_deliveries_total_count"), [
    "hookledger_deliveries_total_count is not exported",
  ]);
  assert.match(problemsOf(scrape, 'hookledger_dead_letters_total{result="dead"}').join(), /no label result/);
  assert.match(problemsOf(scrape, "sum by (reason) (hookledger_deliveries_total)").join(), /no label reason/);
  assert.match(
    problemsOf(scrape, 'hookledger_deliveries_total{result="service_unavailable"}').join(),
    /never sets result="service_unavailable"/,
  );
  assert.match(
    problemsOf(scrape, 'hookledger_attempts_total{result=~"settled|faild"}').join(),
    /never sets result="faild"/,
  );
});

test("the alert rules parse as YAML, and each has alert, expr, for, labels.severity and annotations", () => {
  assert.ok(Array.isArray(rulesFile.groups) && rulesFile.groups.length > 0, "groups");
  for (const group of rulesFile.groups) {
    assert.equal(typeof group.name, "string", "a group's name");
    assert.ok(Array.isArray(group.rules) && group.rules.length > 0, `rules of ${String(group.name)}`);
  }
  const names = new Set<string>();
  for (const rule of rules) {
    assert.equal(typeof rule.alert, "string", `alert of ${JSON.stringify(rule)}`);
    const name = rule.alert as string;
    assert.match(name, /^Hookledger[A-Z]\w+$/);
    names.add(name);
    assert.ok(typeof rule.expr === "string" && rule.expr.trim() !== "", `${name}: expr`);
    assert.match(String(rule.for), /^\d+[smh]$/, `${name}: for`);
    assert.ok(
      ["critical", "warning", "info"].includes(rule.labels?.severity as string),
      `${name}: labels.severity`,
    );
    assert.ok(
      typeof rule.annotations?.summary === "string" && rule.annotations.summary !== "",
      `${name}: summary`,
    );
    assert.ok(typeof rule.annotations?.description === "string", `${name}: description`);
  }
  assert.equal(names.size, rules.length, "alert names are unique");
  // The alerts this file exists for.
  for (const name of [
    "HookledgerDeadLetters",
    "HookledgerBacklogOldestDue",
    "HookledgerHandlerFailureRate",
    "HookledgerSignatureFailures",
    "HookledgerBodyMismatch",
    "HookledgerUnhandledEvents",
    "HookledgerDeliveriesUnavailable",
    "HookledgerBacklogProbeDown",
    "HookledgerMetricsAbsent",
  ]) {
    assert.ok(names.has(name), `an alert ${name}`);
  }
});

test("every metric, label and result value the alert rules use is in a real hookledger scrape", () => {
  const problems = rules.flatMap((rule) =>
    problemsOf(scrape, rule.expr as string).map((p) => `${String(rule.alert)}: ${p}`),
  );
  assert.deepEqual(problems, []);
});

test("the Grafana dashboard is JSON with a uid, a title, schemaVersion >= 36 and complete panels", () => {
  assert.equal(typeof dashboard.uid, "string");
  assert.equal(typeof dashboard.title, "string");
  assert.ok(typeof dashboard.schemaVersion === "number" && dashboard.schemaVersion >= 36, "schemaVersion");
  const datasource = variables.find((v) => v.type === "datasource");
  assert.equal(datasource?.query, "prometheus", "a Prometheus data source variable");
  assert.equal(sourceVariable?.type, "query", "a source variable");
  assert.ok(panels.length >= 10, "panels");
  const ids = new Set<unknown>();
  for (const panel of panels) {
    const title = String(panel.title);
    assert.ok(Number.isInteger(panel.id), `${title}: id`);
    assert.ok(!ids.has(panel.id), `${title}: id ${String(panel.id)} is unique`);
    ids.add(panel.id);
    const { h, w, x, y } = panel.gridPos ?? {};
    for (const v of [h, w, x, y]) assert.ok(Number.isInteger(v), `${title}: gridPos`);
    assert.ok((x as number) + (w as number) <= 24, `${title}: inside the 24-column grid`);
    assert.equal(panel.datasource?.type, "prometheus", `${title}: datasource`);
    assert.equal(
      panel.datasource?.uid,
      `\${${String(datasource?.name)}}`,
      `${title}: the datasource variable`,
    );
    assert.ok(Array.isArray(panel.targets) && panel.targets.length > 0, `${title}: targets`);
    for (const target of panel.targets) {
      assert.ok(typeof target.expr === "string" && target.expr !== "", `${title}: a target's expr`);
      assert.equal(typeof target.refId, "string", `${title}: a target's refId`);
    }
  }
  const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr as string));
  for (const wanted of [
    /hookledger_deliveries_total\b.*result="duplicate"/,
    /hookledger_verification_failures_total/,
    /hookledger_deliveries_total\b.*result="unavailable"/,
    /hookledger_backlog_due_events/,
    /hookledger_backlog_oldest_due_seconds/,
    /histogram_quantile\(0\.5, .*hookledger_claim_duration_seconds_bucket/,
    /histogram_quantile\(0\.99, .*hookledger_claim_duration_seconds_bucket/,
    /histogram_quantile\(0\.5, .*hookledger_attempt_duration_seconds_bucket/,
    /histogram_quantile\(0\.99, .*hookledger_attempt_duration_seconds_bucket/,
    /by \(result, outcome\) \(rate\(hookledger_attempts_total/,
    /hookledger_dead_letters_total/,
  ]) {
    assert.ok(
      exprs.some((e) => wanted.test(e)),
      `a panel target matching ${wanted}`,
    );
  }
});

test("every metric, label and result value the dashboard uses is in a real hookledger scrape", () => {
  const problems = panels.flatMap((panel) =>
    (panel.targets ?? []).flatMap((t) =>
      problemsOf(scrape, t.expr as string).map((p) => `${String(panel.title)}: ${p}`),
    ),
  );
  const query = labelValuesQuery(sourceVariable);
  const labelValues = /^label_values\((\w+), *(\w+)\)$/.exec(query ?? "");
  assert.ok(labelValues, `the source variable's query: ${query}`);
  const [, metric = "", label = ""] = labelValues;
  assert.equal(label, "source");
  if (!scrape.labels.get(metric)?.has(label))
    problems.push(`variable source: ${metric} has no label ${label}`);
  assert.deepEqual(problems, []);
});

test("the npm package ships the alert rules, their tests and the dashboard", () => {
  const [packed] = JSON.parse(
    execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { encoding: "utf8" }),
  ) as { files: { path: string }[] }[];
  const paths = new Set(packed?.files.map((f) => f.path));
  for (const file of [ALERTS, ALERT_TESTS, DASHBOARD])
    assert.ok(paths.has(file), `${file} is in the package`);
});

// promtool: run when installed, else skipped (Debian's package prometheus ships it).
const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" });
const havePromtool = promtool.error === undefined && promtool.status === 0;

test("promtool check rules accepts the alert rules", (t) => {
  if (!havePromtool) return t.skip("promtool not installed (Debian package prometheus)");
  const r = spawnSync("promtool", ["check", "rules", ALERTS], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`SUCCESS: ${rules.length} rules found`));
});

test("promtool test rules: the dead-letter and backlog alerts fire on synthetic series and stay quiet otherwise", (t) => {
  if (!havePromtool) return t.skip("promtool not installed (Debian package prometheus)");
  const tests = readFileSync(ALERT_TESTS, "utf8");
  for (const alert of [
    "HookledgerDeadLetters",
    "HookledgerBacklogOldestDue",
    "HookledgerBacklogOldestDueCritical",
  ]) {
    assert.match(tests, new RegExp(`alertname: ${alert}\\n\\s+exp_alerts: \\[\\]`), `${alert} stays quiet`);
    assert.match(
      tests,
      new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:\\n\\s+- exp_labels:`),
      `${alert} fires`,
    );
  }
  const r = spawnSync("promtool", ["test", "rules", ALERT_TESTS], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS/);
});
