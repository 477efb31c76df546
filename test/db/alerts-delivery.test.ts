// startAlerts' messages: once per episode and destination whatever the number of evaluators, retried after a failed
// send, never held up by a destination that does not answer, logged without URLs or secrets; and startService runs it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  type AlertDestination,
  type AlertsOptions,
  createLogger,
  resolveConfig,
  silentLogger,
  startAlerts,
  startService,
} from "hookledger";
import { type AlertReceiver, startAlertReceiver, verifiedAlert } from "../helpers/alert-receiver.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { seedEvents } from "../helpers/ledger-rows.js";
import { freePort } from "../helpers/net.js";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let t: TestLedger;
const receivers: AlertReceiver[] = [];
before(async () => {
  t = await freshLedger();
});
after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await t.drop();
});

async function receiver(answer?: (n: number) => number | "hang"): Promise<AlertReceiver> {
  const r = await startAlertReceiver(answer);
  receivers.push(r);
  return r;
}

const dead = (source: string, id: string) => seedEvents(t.pool, t.ledger, [{ source, id, status: "dead" }]);
const requeue = (source: string) =>
  t.pool.query(
    `update ${t.ledger.s}.events set status = 'pending' where source = $1::text and status = 'dead'`,
    [source],
  );

function options(
  source: string,
  destinations: AlertDestination[],
  more: Partial<AlertsOptions> = {},
): AlertsOptions {
  return {
    pool: t.newPool("admin", 2),
    ledger: t.ledger,
    sources: [source],
    rules: { deadLetters: { atLeast: 1 } },
    destinations,
    everyMs: 20,
    pollMs: 20,
    log: silentLogger(),
    ...more,
  };
}

test("startAlerts sends each destination one firing and one resolved message per episode, though five instances race", async () => {
  const slack = await receiver();
  const hook = await receiver();
  const destinations: AlertDestination[] = [
    { kind: "slack", name: "slack", url: slack.url },
    { kind: "webhook", name: "webhooks[0]", url: hook.url, secret: SECRET },
  ];
  await dead("race", "evt_1");
  // Started together with the condition already true: their first evaluations race on the same state row.
  const instances = Array.from({ length: 5 }, () => startAlerts(options("race", destinations)));
  const kinds = () =>
    hook.received.map((r) => verifiedAlert(SECRET, r)).map((p) => `${p.type}#${p.data.episode}`);
  try {
    await waitFor("the firing message", async () => slack.received.length >= 1 && hook.received.length >= 1);
    await sleep(600); // some 150 more evaluations
    assert.deepEqual(kinds(), ["alert.firing#1"]);
    assert.equal(slack.received.length, 1);
    const text = (slack.bodies()[0] as { text: string }).text;
    assert.match(text, /deadLetters\* firing for source `race`: 1 dead events/);

    await requeue("race");
    await waitFor(
      "the resolved message",
      async () => slack.received.length >= 2 && hook.received.length >= 2,
    );
    await sleep(600);
    assert.deepEqual(kinds(), ["alert.firing#1", "alert.resolved#1"]);
    assert.equal(slack.received.length, 2);
    assert.match((slack.bodies()[1] as { text: string }).text, /deadLetters\* resolved for source `race`/);

    await dead("race", "evt_2");
    await waitFor("the second episode", async () => slack.received.length >= 3 && hook.received.length >= 3);
    await sleep(300);
    assert.deepEqual(kinds(), ["alert.firing#1", "alert.resolved#1", "alert.firing#2"]);
    assert.equal(slack.received.length, 3);
    const ids = hook.received.map((r) => r.headers["webhook-id"]);
    assert.equal(new Set(ids).size, 3, "each message has its own webhook-id");
  } finally {
    await Promise.all(instances.map((a) => a.stop()));
  }
});

test("startAlerts sends a message again after the URL answered 500, with the same webhook-id and a valid signature", async () => {
  const hook = await receiver((n) => (n === 0 ? 500 : 200));
  await dead("retry", "evt_1");
  const alerts = startAlerts(
    options("retry", [{ kind: "webhook", name: "webhooks[0]", url: hook.url, secret: SECRET }], {
      retry: { baseDelayMs: 50 },
    }),
  );
  try {
    await waitFor("the retried message", async () => hook.received.length >= 2);
    await sleep(300);
  } finally {
    await alerts.stop();
  }
  assert.equal(hook.received.length, 2);
  const [first, second] = hook.received.map((r) => verifiedAlert(SECRET, r));
  assert.deepEqual(first, second);
  assert.equal(first?.type, "alert.firing");
  assert.equal(hook.received[0]?.headers["webhook-id"], hook.received[1]?.headers["webhook-id"]);
  const row = await t.pool.query(
    `select attempts, sent_at is not null as sent, last_error from ${t.ledger.s}.alert_messages where source = 'retry'`,
  );
  assert.deepEqual(row.rows, [{ attempts: 2, sent: true, last_error: null }]);
});

test("startAlerts: a destination that does not answer holds up neither another destination nor the evaluations", async () => {
  const slack = await receiver(() => "hang");
  const hook = await receiver();
  await dead("hang", "evt_1");
  const started = Date.now();
  const alerts = startAlerts(
    options(
      "hang",
      [
        { kind: "slack", name: "slack", url: slack.url },
        { kind: "webhook", name: "webhooks[0]", url: hook.url, secret: SECRET },
      ],
      { sendTimeoutMs: 20_000 },
    ),
  );
  const evaluatedAt = async () =>
    (
      await t.pool.query<{ at: Date }>(
        `select evaluated_at as at from ${t.ledger.s}.alerts where source = 'hang' and rule = 'deadLetters'`,
      )
    ).rows[0]?.at.getTime() ?? 0;
  try {
    await waitFor(
      "the webhook's message",
      async () => hook.received.length === 1 && slack.received.length === 1,
    );
    assert.ok(Date.now() - started < 10_000, "not after the hanging send's timeout");
    const before = await evaluatedAt();
    await waitFor("a later evaluation", async () => (await evaluatedAt()) > before, 5_000);
    await requeue("hang");
    await waitFor("the webhook's resolved message", async () => hook.received.length === 2, 5_000);
  } finally {
    const stopping = Date.now();
    await alerts.stop();
    assert.ok(Date.now() - stopping < 5_000, "stop() abandons the send in flight");
  }
});

test("startAlerts logs failed sends by destination name and kind, never the URL, its token or the secret", async () => {
  const slack = await receiver(() => 500);
  const closedPort = await freePort();
  const lines: string[] = [];
  const log = createLogger({
    level: "debug",
    format: "json",
    destination: { write: (l: string) => lines.push(l) },
  });
  await dead("logs", "evt_1");
  const alerts = startAlerts(
    options(
      "logs",
      [
        { kind: "slack", name: "slack", url: slack.url },
        {
          kind: "webhook",
          name: "webhooks[0]",
          url: `http://127.0.0.1:${closedPort}/in/tok3n`,
          secret: SECRET,
        },
      ],
      { log, retry: { baseDelayMs: 20 } },
    ),
  );
  const failures = () =>
    lines.map((l) => JSON.parse(l)).filter((r) => r.msg === "alert not sent; retrying") as {
      destination: string;
      error: string;
    }[];
  try {
    await waitFor("failures of both destinations", async () => {
      const names = new Set(failures().map((f) => f.destination));
      return names.has("slack") && names.has("webhooks[0]");
    });
  } finally {
    await alerts.stop();
  }
  assert.ok(failures().some((f) => f.destination === "slack" && f.error === "HTTP 500"));
  assert.ok(failures().some((f) => f.destination === "webhooks[0]" && /^network error/.test(f.error)));
  assert.ok(lines.some((l) => JSON.parse(l).msg === "alert firing"));
  const all = lines.join("\n");
  for (const secret of ["tokenpart", "/services/", "tok3n", String(closedPort), SECRET, SECRET.slice(6)]) {
    assert.ok(!all.includes(secret), `the log holds ${secret}`);
  }
  const errors = await t.pool.query(
    `select last_error from ${t.ledger.s}.alert_messages where source = 'logs'`,
  );
  for (const r of errors.rows) assert.ok(!String(r.last_error).includes("tok"), r.last_error);
});

test("startService with alerts sends from the process that runs the worker, and stop() ends it", async () => {
  const hook = await receiver();
  await dead("svc", "evt_1");
  const service = await startService(
    resolveConfig(
      {
        database: { url: t.url, schema: t.schema },
        sources: [{ name: "svc", provider: "stripe", secrets: ["whsec_x"] }],
        alerts: { every: "1s", webhooks: [{ url: hook.url, secret: SECRET }], rules: { backlogAge: false } },
      },
      {},
    ),
    { log: silentLogger(), serve: false, work: true },
  );
  try {
    await waitFor("the firing message", async () => hook.received.length === 1);
    const payload = verifiedAlert(SECRET, hook.received[0] ?? { path: "", headers: {}, body: "" });
    assert.equal(payload.type, "alert.firing");
    assert.equal(payload.data.rule, "deadLetters");
    assert.equal(payload.data.source, "svc");
  } finally {
    await service.stop();
  }
});

test("startAlerts deletes messages sent or given up on more than 30 days ago, and keeps the rest", async () => {
  const hook = await receiver();
  const row = (rule: string, createdDaysAgo: number, state: "sent" | "given_up" | "due") =>
    t.pool.query(
      `insert into ${t.ledger.s}.alert_messages (source, rule, episode, kind, destination, data, created_at,
         sent_at, next_attempt_at)
       values ('sweep', $1, 1, 'firing', 'elsewhere', '{}', now() - $2 * interval '1 day',
         case when $3 = 'sent' then now() - $2 * interval '1 day' end,
         case when $3 = 'given_up' then 'infinity'::timestamptz else now() + interval '1 day' end)`,
      [rule, createdDaysAgo, state],
    );
  await row("old_sent", 31, "sent");
  await row("old_given_up", 40, "given_up");
  await row("old_due", 31, "due");
  await row("new_sent", 2, "sent");
  const alerts = startAlerts(
    options("sweep", [{ kind: "webhook", name: "webhooks[0]", url: hook.url, secret: SECRET }]),
  );
  const left = async () =>
    (
      await t.pool.query<{ rule: string }>(
        `select rule from ${t.ledger.s}.alert_messages where source = 'sweep' order by rule`,
      )
    ).rows.map((r) => r.rule);
  try {
    await waitFor("the sweep", async () => (await left()).length === 2);
    assert.deepEqual(await left(), ["new_sent", "old_due"]);
  } finally {
    await alerts.stop();
  }
});
