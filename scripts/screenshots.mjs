// Regenerates the dashboard's screenshots in docs/images/ (README.md, docs/dashboard.md) from a realistic ledger:
// three sources, real signed deliveries through a real service and worker, duplicates, stale updates, refused
// signatures, dead and failed events. The events and the delivery counts are then spread over the last hour, so the
// health charts have a shape. Needs the build, Postgres (HOOKLEDGER_TEST_DATABASE_URL or 127.0.0.1:5432/test) and
// Chromium (HOOKLEDGER_CHROMIUM or /usr/bin/chromium):
//   npm run build && node scripts/screenshots.mjs
import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { chromium } from "playwright-core";
import { createPool, Handlers, migrate, resolveConfig, silentLogger, startService } from "../dist/index.js";
import { signDelivery } from "../dist/testing.js";

const url = process.env.HOOKLEDGER_TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const schema = `shots_${randomBytes(4).toString("hex")}`;
const TOKEN = "screenshots-token-0123456789";
const SECRETS = {
  stripe: "whsec_screenshots_stripe",
  github: "screenshots-github",
  billing: `whsec_${Buffer.from("screenshots-billing-key").toString("base64")}`,
};
const out = new URL("../docs/images/", import.meta.url);

const objectId = (ctx) => ctx.event.payload.data?.object?.id ?? ctx.event.payload.data?.id;
const handlers = new Handlers()
  .on("stripe", "customer.subscription.created", async (ctx) => {
    await ctx.advance("subscription", objectId(ctx), ctx.event.occurredAt ?? 0);
  })
  .on("stripe", "customer.subscription.updated", async (ctx) => {
    await ctx.advance("subscription", objectId(ctx), ctx.event.occurredAt ?? 0);
  })
  .on("stripe", "invoice.paid", async () => {})
  .on("stripe", "payout.paid", async (ctx) => {
    throw new Error(`accounting API answered 503 Service Unavailable (POST /v1/payouts/${objectId(ctx)})`);
  })
  .on("github", "push", async () => {})
  .on("github", "deployment_status", async () => {
    throw new Error("deploy hook timed out after 10000 ms");
  })
  .on("billing", "invoice.created", async () => {});

const config = (baseDelayMs) =>
  resolveConfig(
    {
      database: { url, schema },
      port: 0,
      sources: [
        { name: "stripe", provider: "stripe", secrets: [SECRETS.stripe] },
        { name: "github", provider: "github", secrets: [SECRETS.github] },
        { name: "billing", provider: "standard", secrets: [SECRETS.billing] },
      ],
      handlers,
      dashboard: { users: [{ name: "alice", token: TOKEN }] },
      worker: { concurrency: 4, retry: { maxAttempts: 3, baseDelayMs, maxDelayMs: baseDelayMs * 2 } },
    },
    {},
  );

const pool = createPool({ connectionString: url, role: "admin", max: 2 });
await migrate(pool, schema);
let service = await startService(config(300), { log: silentLogger(), serve: true, work: true });
const s = `"${schema}"`;
let browser;
try {
  const post = async (source, body, { type, id, secret = SECRETS[source] } = {}) => {
    const provider = source === "billing" ? "standard" : source;
    const signed = signDelivery({ provider, secret, body: JSON.stringify(body), type, id });
    const response = await fetch(`${service.url}/webhooks/${source}`, {
      method: "POST",
      headers: signed.headers,
      body: signed.body,
    });
    if (response.status !== 200 && secret === SECRETS[source])
      throw new Error(`${source}: ${response.status}`);
  };
  const t0 = 1_760_000_000;
  const stripe = (id, type, object, created, extra = {}) =>
    post("stripe", {
      id,
      object: "event",
      type,
      created,
      data: {
        object: { id: object, object: type.split(".").at(-2).replace("customer", "subscription"), ...extra },
      },
    });
  for (let i = 0; i < 14; i++) {
    const sub = `sub_1Q${(4821 + i * 37).toString(36).toUpperCase()}aZ`;
    await stripe(`evt_1Q${i}Cr${i}xLkD${i}a`, "customer.subscription.created", sub, t0 + i, {
      status: "trialing",
    });
    await stripe(`evt_1Q${i}Ds${i}yMlE${i}b`, "customer.subscription.updated", sub, t0 + 600 + i, {
      status: "active",
    });
    if (i % 4 === 1) {
      // A late, older update: applied nothing (stale).
      await stripe(`evt_1Q${i}Bq${i}wKjC${i}c`, "customer.subscription.updated", sub, t0 + 300 + i, {
        status: "past_due",
      });
    }
    await stripe(`evt_1Q${i}Ft${i}zNmF${i}d`, "invoice.paid", `in_1Q${i}Hx7${i}Lm`, t0 + 700 + i);
    if (i % 3 === 0)
      await stripe(`evt_1Q${i}Ft${i}zNmF${i}d`, "invoice.paid", `in_1Q${i}Hx7${i}Lm`, t0 + 700 + i);
  }
  for (let i = 0; i < 3; i++)
    await stripe(`evt_1Q${i}Po${i}uTpZ${i}e`, "payout.paid", `po_1Q${i}Jd8${i}Kp`, t0 + 900 + i);
  for (let i = 0; i < 16; i++) {
    const id = `6f1c${(0x2a00 + i * 7).toString(16)}-8b1e-11ef-9a3c-${(0x42ac120002 + i).toString(16)}`;
    await post(
      "github",
      { ref: "refs/heads/main", after: randomBytes(20).toString("hex") },
      { type: "push", id },
    );
    if (i % 5 === 0) await post("github", { ref: "refs/heads/main", retry: true }, { type: "push", id });
  }
  for (let i = 0; i < 12; i++) {
    const id = `msg_2k${(9000 + i * 13).toString(36)}Qe7${i}`;
    await post(
      "billing",
      { type: "invoice.created", timestamp: new Date().toISOString(), data: { id: `inv_${i}` } },
      { id },
    );
  }
  // Refused: a stale secret after a rotation that missed one sender.
  for (let i = 0; i < 4; i++) {
    await post(
      "stripe",
      { id: `evt_bad_${i}`, type: "invoice.paid", data: {} },
      { secret: "whsec_rotated_out" },
    );
  }
  const until = async (what, sql) => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      if ((await pool.query(sql)).rows[0].ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    const { rows } = await pool.query(
      `select source, event_type, status, attempts, count(*)::int as n from ${s}.events group by 1, 2, 3, 4`,
    );
    throw new Error(`timed out waiting for ${what}: ${JSON.stringify(rows)}`);
  };
  await until("the first batch", `select bool_and(status in ('settled', 'dead')) as ok from ${s}.events`);
  // Failing now, retried in a minute: the service stops after their first failure, so they stay failed.
  await service.stop();
  service = await startService(config(60_000), { log: silentLogger(), serve: true, work: true });
  for (let i = 0; i < 2; i++) {
    const id = `7a2d${i}e00-8b1e-11ef-9a3c-0242ac12000${i}`;
    await post(
      "github",
      { deployment: { id: 1_840_000_000 + i }, deployment_status: { state: "success" } },
      {
        type: "deployment_status",
        id,
      },
    );
  }
  await until(
    "the deployment statuses to fail once",
    `select count(*) filter (where status = 'failed') = 2 as ok from ${s}.events where event_type = 'deployment_status'`,
  );
  await service.stop();

  // Spread over the last hour: each entity's events move back together by up to 56 minutes (their order, and so
  // which was stale, stays true), keeping how long each took to settle plus a queueing delay; each minute gets its
  // share of the delivery counts.
  // (event_bodies is partitioned on received_at and joined on it; entity_versions keeps the applied one's too.)
  const client = await pool.connect();
  try {
    await client.query(`create temp table moved as
      select source, dedupe_key, received_at as was, (abs(hashtext(coalesce(entity_id, dedupe_key))) % 3300 + 60) * interval '1 second' as back,
        (0.05 + random() ^ 2 * 4) * interval '1 second' as queued
      from ${s}.events where event_type <> 'deployment_status'`);
    await client.query(`update ${s}.events e set received_at = e.received_at - m.back,
      settled_at = e.settled_at - m.back + m.queued from moved m
      where e.source = m.source and e.dedupe_key = m.dedupe_key`);
    await client.query(`update ${s}.event_bodies b set received_at = b.received_at - m.back from moved m
      where b.source = m.source and b.dedupe_key = m.dedupe_key and b.received_at = m.was`);
    await client.query(`update ${s}.entity_versions v set received_at = v.received_at - m.back,
      applied_at = v.applied_at - m.back + m.queued from moved m
      where v.source = m.source and v.dedupe_key = m.dedupe_key`);
  } finally {
    client.release();
  }
  await pool.query(`insert into ${s}.delivery_stats (source, minute, accepted, duplicates, refused)
    select src, date_trunc('minute', now()) - m * interval '1 minute',
      (2 + 3 * sin(m / 9.0) + random() * 4)::int * w, (random() < 0.25)::int, (m between 18 and 21)::int * 2
    from generate_series(1, 59) m, (values ('stripe', 3), ('github', 2), ('billing', 1)) v(src, w)
    on conflict (source, minute) do update set accepted = excluded.accepted`);

  service = await startService(config(60_000), { log: silentLogger(), serve: true, work: false });
  const admin = service.adminUrl;
  await mkdir(out, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.HOOKLEDGER_CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox"],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("pageerror", (e) => console.error("page error:", e.message));
  await page.goto(`${admin}/dashboard/`);
  await page.getByLabel("Access token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("table", { name: "Events" }).waitFor();
  const shot = async (name, fullPage = false) => {
    await page.mouse.move(0, 0);
    await page.screenshot({ path: new URL(name, out).pathname, fullPage });
    console.log(`docs/images/${name}`);
  };
  await shot("dashboard-events.png");

  const stale = (
    await pool.query(
      `select dedupe_key from ${s}.events where outcome = 'stale' order by received_at desc limit 1`,
    )
  ).rows[0].dedupe_key;
  await page.goto(`${admin}/dashboard/#/event/stripe/${stale}`);
  await page.getByRole("heading", { level: 2, name: /History of/ }).waitFor();
  await shot("dashboard-event.png", true);

  await page.goto(`${admin}/dashboard/#/dead`);
  await page.getByRole("heading", { level: 2, name: "Recorded actions" }).waitFor();
  await page.getByRole("checkbox").first().check();
  await page.getByRole("button", { name: "Retry selected" }).click();
  await page.getByRole("dialog").waitFor();
  await shot("dashboard-dead.png");
  await page.keyboard.press("Escape");

  await page.goto(`${admin}/dashboard/#/health`);
  await page.locator("figure").first().waitFor();
  await page.setViewportSize({ width: 1280, height: 1000 });
  await shot("dashboard-health.png");
} finally {
  await browser?.close();
  await service.stop();
  await pool.query(`drop schema if exists ${s} cascade`);
  await pool.end();
}
