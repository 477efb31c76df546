import { randomBytes } from "node:crypto";
import pg from "pg";
import { DEMO_SECRETS } from "../demo/config.js";
import { signDelivery } from "../testing/sign.js";

/** One sample delivery and what the demo expects of it. */
interface Sample {
  readonly label: string;
  readonly source: "stripe" | "github";
  readonly id: string;
  readonly body: string;
  readonly headers: Record<string, string>;
  /** Wait until this event settled before sending the next one. */
  readonly settleBeforeNext?: boolean;
}

function stripeSample(label: string, id: string, type: string, created: number, sub: object): Sample {
  const body = JSON.stringify({ id, object: "event", type, created, data: { object: sub } });
  const { headers } = signDelivery({ provider: "stripe", secret: DEMO_SECRETS.stripe, body });
  return { label, source: "stripe", id, body, headers };
}

/** Builds the demo's deliveries: a new event, its duplicate, an out-of-order pair and a GitHub push. */
export function demoSamples(): Sample[] {
  const run = randomBytes(4).toString("hex");
  const sub = (status: string, plan: string) => ({
    id: `sub_${run}`,
    object: "subscription",
    customer: `cus_${run}`,
    status,
    items: { data: [{ price: { id: plan } }] },
  });
  const t = Math.floor(Date.now() / 1000) - 60;
  const created = stripeSample(
    "new subscription",
    `evt_${run}_1`,
    "customer.subscription.created",
    t,
    sub("trialing", "price_basic"),
  );
  const push = JSON.stringify({
    ref: "refs/heads/main",
    after: run.repeat(5),
    repository: { full_name: "acme/shop" },
  });
  const delivery = `${run}-0000-4000-8000-000000000000`;
  return [
    created,
    // Settled before the upgrade is sent: a worker may run two events of one entity at once, and the created
    // event taken after the upgrade committed would be skipped as stale.
    { ...created, label: "the same event again (provider retry)", settleBeforeNext: true },
    {
      ...stripeSample(
        "upgrade, newer (t+20 s)",
        `evt_${run}_3`,
        "customer.subscription.updated",
        t + 20,
        sub("active", "price_pro"),
      ),
      settleBeforeNext: true,
    },
    stripeSample(
      "older update, arrives last (t+10 s)",
      `evt_${run}_2`,
      "customer.subscription.updated",
      t + 10,
      sub("active", "price_basic"),
    ),
    {
      label: "GitHub push",
      source: "github",
      id: delivery,
      body: push,
      headers: signDelivery({
        provider: "github",
        secret: DEMO_SECRETS.github,
        body: push,
        id: delivery,
        type: "push",
      }).headers,
    },
  ];
}

/**
 * `hookledger send`: signs and posts the demo deliveries to a running service, then waits for the worker and
 * prints what happened to each (when it can reach the database).
 */
export async function sendDemo(
  baseUrl: string,
  database: { url: string; schema: string } | undefined,
  out: (line: string) => void,
  post: (url: string, init: RequestInit) => Promise<Response> = fetch,
): Promise<number> {
  const samples = demoSamples();
  const client = database ? new pg.Client({ connectionString: database.url }) : undefined;
  await client?.connect();
  const statusOf = async (ids: string[]) =>
    (
      await (client as pg.Client).query<{
        dedupe_key: string;
        event_type: string;
        status: string;
        outcome: string | null;
      }>(
        `select dedupe_key, event_type, status, outcome from "${database?.schema}".events
         where dedupe_key = any($1::text[]) order by received_at`,
        [ids],
      )
    ).rows;
  const untilSettled = async (ids: string[]) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const rows = await statusOf(ids);
      if (
        (rows.length === ids.length && rows.every((r) => r.status === "settled")) ||
        Date.now() > deadline
      ) {
        return rows;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  let refused = 0;
  try {
    for (const sample of samples) {
      const response = await post(`${baseUrl}/webhooks/${sample.source}`, {
        method: "POST",
        headers: sample.headers,
        body: sample.body,
      });
      const answer = await response.text();
      out(`POST /webhooks/${sample.source}  ${sample.label.padEnd(38)} → ${response.status} ${answer}`);
      if (!response.ok) refused++;
      // The older update must reach the worker after the newer one was applied, or both may run at once and both
      // apply (the end state is the same; the demo wants to show the stale skip).
      if (client && sample.settleBeforeNext) await untilSettled([sample.id]);
    }
    if (refused > 0) {
      out("");
      out(
        `${refused} of ${samples.length} demo deliveries were refused: the demo signs with the demo's own secrets for ` +
          "its sources 'stripe' and 'github'. For your own sources: hookledger send --source NAME --file EVENT.json",
      );
      return refused;
    }
    if (!client) return 0;
    const rows = await untilSettled([...new Set(samples.map((s) => s.id))]);
    out("");
    out("ledger after the worker ran:");
    for (const row of rows) {
      out(
        `  ${row.dedupe_key.padEnd(40)} ${row.event_type.padEnd(30)} ${row.status}${row.outcome ? ` (${row.outcome})` : ""}`,
      );
    }
    const sub = await client.query<{
      subscription_id: string;
      plan: string;
      status: string;
      updated_by_event: string;
    }>(
      "select subscription_id, plan, status, updated_by_event from hookledger_demo.subscriptions where subscription_id = $1",
      [`sub_${samples[0]?.id.split("_")[1]}`],
    );
    const row = sub.rows[0];
    if (row) {
      out("");
      out(
        `subscription ${row.subscription_id}: plan ${row.plan}, status ${row.status} (from ${row.updated_by_event}; the older update was skipped as stale)`,
      );
    }
    return 0;
  } finally {
    await client?.end();
  }
}
