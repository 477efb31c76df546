import assert from "node:assert/strict";
import { chmod, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  Handlers,
  Outbox,
  resolveConfig,
  SendError,
  type Service,
  silentLogger,
  startService,
} from "hookledger";
import { signDelivery } from "hookledger/testing";
import type { Browser, Page } from "playwright-core";
import { browserSkipped, launchChromium, watchPage } from "../helpers/browser.js";
import { cleanupAfter, runCli, startCli } from "../helpers/cli.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { freePort, serverPort } from "../helpers/net.js";

// The dashboard in a real browser: Debian's headless Chromium driven by playwright-core. The demo as a user runs
// it (`hookledger serve` on the embedded Postgres, `hookledger send`, the printed URL), then a service with a
// configured token whose worker fails one type, for sign-in, the list, filters, one event, the live list, retry
// and the keyboard. Every page must log no console error (a CSP violation is one) and throw nothing.

const TOKEN = "browser-token-0123456789";
const SECRET = "whsec_browser_test";
const skip = browserSkipped;
if (skip) console.error(`\n*** ${skip} ***\n`);

const { dirs } = cleanupAfter();
let browser: Browser;
let t: TestLedger;
let service: Service;
let admin: string;
// The outbox's "crm" sender refuses every message for good while this is true.
let crmRefuses = true;

before(async () => {
  if (skip) return;
  browser = await launchChromium();
  t = await freshLedger();
  const handlers = new Handlers()
    .on("stripe", "invoice.paid", async (ctx) => {
      const invoice = (ctx.event.payload as { data: { object: { id: string } } }).data.object.id;
      await ctx.advance("invoice", invoice, ctx.event.occurredAt ?? 0);
    })
    .on("stripe", "customer.updated", async () => {})
    .on("stripe", "charge.failed", async () => {
      throw new Error("the card processor said no");
    })
    .on("stripe", "invoice.voided", async (ctx) => {
      await ctx.outbox.send("crm", { voided: ctx.event.id });
    });
  const outbox = new Outbox({ pollIntervalMs: 50 }).on("crm", () => {
    if (crmRefuses) throw new SendError("the CRM refused it", { permanent: true, status: 422 });
  });
  service = await startService(
    resolveConfig(
      {
        database: { url: t.url, schema: t.schema },
        port: 0,
        sources: [{ name: "stripe", provider: "stripe", secrets: [SECRET] }],
        handlers,
        outbox,
        dashboard: { users: [{ name: "alice", token: TOKEN }] },
        worker: { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 }, pollIntervalMs: 50 },
      },
      {},
    ),
    { log: silentLogger(), serve: true, work: true },
  );
  admin = service.adminUrl as string;
  await deliver("invoice.paid", "in_1", 1_700_000_200, "evt_paid_new");
  // The older invoice event arrives once the newer one is applied, so the guard answers it stale. Claimed while the
  // newer one still waited, either could run first (the guard then applies both, in the order they ran).
  await waitFor("the newer invoice event applied", async () => {
    const { rows } = await t.pool.query(
      `select status from ${t.ledger.s}.events where dedupe_key = 'evt_paid_new'`,
    );
    return rows[0]?.status === "settled";
  });
  await deliver("invoice.paid", "in_1", 1_700_000_100, "evt_paid_old");
  await deliver("customer.updated", "cus_1", 1_700_000_300, "evt_customer");
  await deliver("charge.failed", "ch_1", 1_700_000_400, "evt_dead_retry");
  await deliver("charge.failed", "ch_2", 1_700_000_500, "evt_dead_keep");
  await deliver("invoice.voided", "in_2", 1_700_000_600, "evt_voided");
  await waitFor("the seeded events settled or dead, and the outbox message dead", async () => {
    const { rows } = await t.pool.query(
      `select (select count(*)::int from ${t.ledger.s}.events where status in ('settled', 'dead')) as n,
         (select count(*)::int from ${t.ledger.s}.outbox where status = 'dead') as dead`,
    );
    return rows[0].n === 6 && rows[0].dead === 1;
  });
});
after(async () => {
  await browser?.close();
  await service?.stop();
  await t?.drop();
});

async function deliver(type: string, objectId: string, created: number, id: string): Promise<string> {
  const body = JSON.stringify({ id, type, created, data: { object: { id: objectId } } });
  const signed = signDelivery({ provider: "stripe", secret: SECRET, body });
  const response = await fetch(`${service.url}/webhooks/stripe`, {
    method: "POST",
    headers: signed.headers,
    body: signed.body,
  });
  assert.equal(response.status, 200, `the delivery of ${id} was accepted`);
  return id;
}

async function ledgerRow(id: string): Promise<{ status: string; attempts: number }> {
  const { rows } = await t.pool.query(
    `select status, attempts from ${t.ledger.s}.events where dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

/** A fresh browser context (no cookie) whose page watches for console errors and exceptions. */
async function openPage(expected?: RegExp): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return { page, ...watchPage(page, expected) };
}

/** Signs in through the form, as a person would, and waits for the events list. */
async function signedIn(): Promise<{ page: Page; problems: string[] }> {
  const opened = await openPage();
  await opened.page.goto(`${admin}/dashboard/`);
  await opened.page.getByLabel("Access token").fill(TOKEN);
  await opened.page.getByRole("button", { name: "Sign in" }).click();
  await opened.page.getByRole("table", { name: "Events" }).waitFor();
  return opened;
}

/** The cells of a table's rows (by default the events table's), by column name. */
async function rows(page: Page, name = "Events"): Promise<Record<string, string>[]> {
  // Plain loops: a named inner function would be compiled to a __name() call the page does not have.
  return page.getByRole("table", { name, exact: true }).evaluate((table: HTMLTableElement) => {
    const head = Array.from(table.tHead?.rows[0]?.cells ?? [], (c) => (c.textContent ?? "").trim());
    return Array.from(table.tBodies[0]?.rows ?? [], (row) =>
      Object.fromEntries(
        Array.from(row.cells, (c, i) => [head[i] ?? String(i), (c.textContent ?? "").trim()]),
      ),
    );
  });
}

async function closeAndCheck(opened: { page: Page; problems: string[] }): Promise<void> {
  await opened.page.context().close();
  assert.deepEqual(opened.problems, [], "no console error, CSP violation or uncaught exception");
}

test("GET /dashboard/ in Chromium without a session lands on the sign-in page; a wrong token shows the error and no event", {
  skip,
}, async () => {
  const opened = await openPage(/status of 401/);
  const { page } = opened;
  await page.goto(`${admin}/dashboard/`);
  assert.equal(new URL(page.url()).pathname, "/dashboard/login", "redirected to the sign-in page");
  await page.getByLabel("Access token").fill(`${TOKEN}-wrong`);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").waitFor();
  assert.match(
    (await page.getByRole("alert").textContent()) ?? "",
    /That token or link is not valid/,
    "the page says the token was refused",
  );
  assert.doesNotMatch(await page.content(), /evt_/, "no event id on the refused page");
  const api = await page.evaluate(async () => {
    const response = await fetch("/dashboard/api/events");
    return { status: response.status, text: await response.text() };
  });
  assert.equal(api.status, 401, "the API refuses the browser without a session");
  assert.doesNotMatch(api.text, /evt_/, "and shows no event");
  await closeAndCheck(opened);
});

test("signing in with the token through the form shows the events with their status and outcome", {
  skip,
}, async () => {
  const opened = await signedIn();
  const { page } = opened;
  assert.match(
    (await page.locator("#user").textContent()) ?? "",
    /Signed in as alice/,
    "the header names the user",
  );
  const byId: Record<string, Record<string, string>> = Object.fromEntries(
    (await rows(page)).map((r) => [r["Event id"], r]),
  );
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(byId).map(([id, r]) => [id, `${r.Type} ${r.Status} ${r.Outcome} ${r.Attempts}`]),
    ),
    {
      evt_paid_new: "invoice.paid settled applied 1",
      evt_paid_old: "invoice.paid settled stale 1",
      evt_customer: "customer.updated settled applied 1",
      evt_dead_retry: "charge.failed dead  2",
      evt_dead_keep: "charge.failed dead  2",
      evt_voided: "invoice.voided settled applied 1",
    },
    "every seeded event is listed with its type, status, outcome and attempts",
  );
  await closeAndCheck(opened);
});

test("the filter form narrows the list by type and status and puts the filter in the address", {
  skip,
}, async () => {
  const opened = await signedIn();
  const { page } = opened;
  await page.getByLabel("Type", { exact: true }).fill("invoice.paid");
  await page.getByLabel("Status").selectOption("settled");
  await page.getByLabel("Outcome").selectOption("stale");
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForURL(/#\/events\?/);
  const query = new URLSearchParams(new URL(page.url()).hash.split("?")[1]);
  assert.deepEqual(
    Object.fromEntries(query),
    { type: "invoice.paid", status: "settled", outcome: "stale" },
    "the address carries the filter",
  );
  await waitFor("the filtered list", async () => (await rows(page)).length === 1);
  assert.equal((await rows(page))[0]?.["Event id"], "evt_paid_old", "only the stale invoice matches");

  await page.goto(`${admin}/dashboard/#/events?status=dead`);
  await page.reload();
  await page.getByRole("table", { name: "Events" }).waitFor();
  assert.equal(await page.getByLabel("Status").inputValue(), "dead", "a shared address fills the form");
  const dead = await rows(page);
  assert.deepEqual(dead.map((r) => r["Event id"]).sort(), ["evt_dead_keep", "evt_dead_retry"]);
  assert.ok(
    dead.every((r) => r.Status === "dead"),
    "every row of the status filter is dead",
  );
  await closeAndCheck(opened);
});

test("opening a dead event shows its payload and each failed attempt with its error", { skip }, async () => {
  const opened = await signedIn();
  const { page } = opened;
  await page.getByRole("link", { name: "evt_dead_keep", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: /charge\.failed/ }).waitFor();
  assert.match(
    (await page.getByLabel("Payload").textContent()) ?? "",
    /"id": "ch_2"/,
    "the payload is shown",
  );
  const attempts = page.locator("ol > li");
  assert.equal(await attempts.count(), 2, "both failed attempts are listed");
  for (const [i, text] of (await attempts.allTextContents()).entries()) {
    assert.match(text, new RegExp(`Attempt ${i + 1}`), `attempt ${i + 1} is numbered`);
    assert.match(text, /the card processor said no/, `attempt ${i + 1} shows the handler's error`);
  }
  assert.ok(await page.getByRole("button", { name: "Retry now" }).isVisible(), "a dead event offers a retry");
  await closeAndCheck(opened);
});

test("a new signed delivery appears in the open events list within seconds, without a reload", {
  skip,
}, async () => {
  const opened = await signedIn();
  const { page } = opened;
  await page.getByRole("status").filter({ hasText: /^Live/ }).waitFor();
  await page.evaluate(() => {
    (window as unknown as { stayed: boolean }).stayed = true;
  });
  await deliver("invoice.paid", "in_live", 1_700_000_600, "evt_live");
  await page
    .getByRole("row")
    .filter({ hasText: "evt_live" })
    .waitFor({ timeout: 8_000 })
    .catch(() => assert.fail("evt_live did not appear in the open list within 8 s"));
  assert.equal(
    await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed),
    true,
    "the page was not reloaded",
  );
  assert.match(
    (await page.getByRole("row").filter({ hasText: "evt_live" }).getAttribute("class")) ?? "",
    /\bnew\b/,
    "the new row is marked",
  );
  await closeAndCheck(opened);
});

test("Retry selected on Dead & failed, confirmed in the dialog, records the action under alice and runs the event again", {
  skip,
}, async () => {
  const opened = await signedIn();
  const { page } = opened;
  await page.getByRole("link", { name: "Dead & failed" }).click();
  await page.getByRole("heading", { level: 1, name: "Dead & failed" }).waitFor();
  await page.getByRole("checkbox", { name: "Select evt_dead_retry" }).check();
  await page.getByRole("button", { name: "Retry selected" }).click();
  const dialog = page.getByRole("dialog", { name: "Retry 1 event?" });
  await dialog.waitFor();
  await dialog.getByRole("button", { name: "Retry", exact: true }).click();
  await dialog.waitFor({ state: "hidden" });
  const recorded = page.getByRole("row").filter({ hasText: "alice" }).filter({ hasText: "evt_dead_retry" });
  await recorded
    .waitFor()
    .catch(() => assert.fail("the retry is not in the Recorded actions table under alice"));
  assert.match(
    (await recorded.textContent()) ?? "",
    /retry.*retried 1/s,
    "the recorded action and its result",
  );
  await waitFor("the retried event's third attempt in the ledger", async () => {
    return (await ledgerRow("evt_dead_retry")).attempts === 3;
  });
  await closeAndCheck(opened);
});

test("the keyboard reaches the views, the filter fields and Apply; Enter applies; the confirm dialog takes focus and Escape cancels", {
  skip,
}, async () => {
  const opened = await signedIn();
  const { page } = opened;
  const focused = () =>
    page.evaluate(() => {
      const el = document.activeElement as HTMLElement & { labels?: NodeListOf<HTMLLabelElement> };
      const label =
        el.getAttribute("aria-label") ?? el.labels?.[0]?.firstChild?.textContent ?? el.textContent;
      return { label: (label ?? "").trim(), inDialog: el.closest("dialog") !== null };
    });
  const tabTo = async (label: string, key = "Tab") => {
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press(key);
      if ((await focused()).label === label) return;
    }
    assert.fail(`${label} is not reachable with ${key}`);
  };
  // The date fields take several Tab stops each (Chromium's day, month, year… segments).
  const seen: string[] = [];
  for (let i = 0; i < 40 && seen.at(-1) !== "Apply"; i++) {
    await page.keyboard.press("Tab");
    seen.push((await focused()).label);
  }
  for (const label of ["Skip to content", "Events", "Dead & failed", "Health", "Sign out", "Type", "Apply"]) {
    assert.ok(seen.includes(label), `Tab reaches ${label} (reached: ${seen.join(" | ")})`);
  }
  await page.goto(`${admin}/dashboard/#/dead`);
  await page.getByRole("heading", { level: 1, name: "Dead & failed" }).waitFor();
  await tabTo("Type");
  await page.keyboard.type("charge.failed");
  await page.keyboard.press("Enter");
  await page.waitForURL(/#\/dead\?type=charge\.failed$/);
  await page.getByRole("checkbox", { name: "Select evt_dead_keep" }).waitFor();
  await tabTo("Select evt_dead_keep");
  await page.keyboard.press("Space");
  await tabTo("Retry selected", "Shift+Tab");
  await page.keyboard.press("Enter");
  await page.getByRole("dialog").waitFor();
  assert.equal((await focused()).inDialog, true, "the confirm dialog takes the focus");
  await page.keyboard.press("Escape");
  await page.getByRole("dialog").waitFor({ state: "hidden" });
  assert.equal((await ledgerRow("evt_dead_keep")).status, "dead", "Escape retried nothing");
  await closeAndCheck(opened);
});

test("hookledger serve without DATABASE_URL, then hookledger send: the printed dashboard URL shows the demo's events and their status in Chromium", {
  skip,
}, async () => {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-browser-"));
  dirs.push(dir);
  // As root the embedded server runs as the postgres user, which must be able to enter the working directory.
  await chmod(dir, 0o755);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(await freePort()),
    HOOKLEDGER_EMBEDDED_PORT: String(await serverPort()),
  };
  for (const name of ["DATABASE_URL", "HOOKLEDGER_SCHEMA", "HOOKLEDGER_DASHBOARD_TOKEN"]) delete env[name];
  const serve = startCli(["serve"], { env, cwd: dir });
  try {
    const [, url] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m, 120_000);
    const [, dashboardUrl] = await serve.waitForLine(/^hookledger dashboard on (http:\/\/\S+)$/m);
    const sent = await runCli(["send", "--url", url ?? ""], { env, cwd: dir });
    assert.equal(sent.code, 0, sent.stderr);
    const ledger = sent.stdout.split("ledger after the worker ran:\n")[1] ?? "";
    const printed = [...ledger.matchAll(/^ {2}(\S+)\s+(\S+)\s+(\w+)(?: \((\w+)\))?$/gm)].map(
      ([, id, type, status, outcome]) => ({ id, type, status, outcome: outcome ?? "" }),
    );
    assert.ok(printed.length >= 4, `send printed the ledger:\n${sent.stdout}`);
    assert.ok(
      printed.some((e) => e.outcome === "stale"),
      "the demo has a stale event",
    );

    const opened = await openPage();
    const { page } = opened;
    await page.goto(dashboardUrl ?? "");
    assert.equal(new URL(page.url()).pathname, "/dashboard/", "the login link signs in");
    await page.getByRole("table", { name: "Events" }).waitFor();
    const shown: Record<string, Record<string, string>> = Object.fromEntries(
      (await rows(page)).map((r) => [r["Event id"], r]),
    );
    for (const e of printed) {
      const row = shown[e.id as string];
      assert.ok(row, `${e.id} is listed`);
      assert.deepEqual(
        [row.Type, row.Status, row.Outcome],
        [e.type, e.status, e.outcome],
        `${e.id} shows what send printed`,
      );
    }
    await closeAndCheck(opened);
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
  }
});

test("the Outbox view lists the dead message with its error; Retry selected sends it again; its page shows the payload", {
  skip,
}, async () => {
  const opened = await signedIn();
  const { page } = opened;
  await page.getByRole("link", { name: "Outbox" }).click();
  await page.getByRole("heading", { level: 1, name: "Outbox" }).waitFor();
  const row = page
    .getByRole("table", { name: "Outbox messages" })
    .getByRole("row")
    .filter({ hasText: "evt_voided" });
  assert.match((await row.textContent()) ?? "", /crm.*dead.*422.*the CRM refused it/s);
  crmRefuses = false;
  await row.getByRole("checkbox").check();
  await page.getByRole("button", { name: "Retry selected" }).click();
  const dialog = page.getByRole("dialog", { name: "Retry 1 message?" });
  await dialog.getByRole("button", { name: "Retry", exact: true }).click();
  await page.getByRole("status").filter({ hasText: "Retried 1 of 1." }).waitFor();
  await waitFor("the retried message sent", async () => {
    const { rows } = await t.pool.query(
      `select status from ${t.ledger.s}.outbox where dedupe_key = 'evt_voided'`,
    );
    return rows[0]?.status === "sent";
  });
  await page.getByRole("link", { name: /^hl_/ }).first().click();
  await page.getByRole("heading", { level: 1, name: /^crm hl_/ }).waitFor();
  assert.match((await page.getByLabel("Payload").textContent()) ?? "", /"voided": "evt_voided"/);
  await closeAndCheck(opened);
});

test("the Outbox view shows a disabled forward destination with its reason and the re-enable command; a forward's page lists its delivery attempts", {
  skip,
}, async () => {
  const s = t.ledger.s;
  await t.pool.query(
    `insert into ${s}.forward_destinations (source, disabled_at, disabled_reason, failures)
     values ('shop', now() - interval '5 minutes', 'the destination answered 410 Gone', 2)`,
  );
  await t.pool.query(
    `insert into ${s}.outbox (source, dedupe_key, message_key, sender, idempotency_key, payload, status, attempts)
     values ('shop', 'evt_fwd', '#forward', 'forward', 'hl_fwd_browser', '{}'::jsonb, 'dead', 2),
       ('shop', 'evt_fwd_next', '#forward', 'forward', 'hl_fwd_browser_next', '{}'::jsonb, 'pending', 0)`,
  );
  await t.pool.query(
    `insert into ${s}.forward_attempts (source, dedupe_key, attempt, status, ms, error, snippet)
     values ('shop', 'evt_fwd', 1, null, 5004, 'timed out after 5000 ms', null),
       ('shop', 'evt_fwd', 2, 410, 31, 'the destination answered 410', '<b>gone</b> for good')`,
  );
  const opened = await signedIn();
  const { page } = opened;
  await page.getByRole("link", { name: "Outbox" }).click();
  await page.getByRole("heading", { level: 2, name: "Forward destinations" }).waitFor();
  const [shop, ...others] = await rows(page, "Forward destinations");
  assert.deepEqual(others, [], "one destination");
  assert.match(
    shop?.State ?? "",
    /^disabled since .+: the destination answered 410 Gonere-enable with: hookledger forward enable shop$/,
  );
  assert.deepEqual([shop?.Source, shop?.Pending, shop?.Dead, shop?.Sent], ["shop", "1", "1", "0"]);
  const row = page
    .getByRole("table", { name: "Forward destinations" })
    .getByRole("row")
    .filter({ hasText: "shop" });
  assert.match(
    (await row.getAttribute("class")) ?? "",
    /\bdisabled\b/,
    "the disabled destination is highlighted",
  );
  const statuses = await page.getByLabel("Status").locator("option").allTextContents();
  assert.ok(statuses.includes("stale"), `the status filter offers stale: ${statuses.join(", ")}`);

  await page.getByRole("link", { name: "hl_fwd_browser", exact: true }).click();
  await page.getByRole("heading", { level: 1, name: "forward hl_fwd_browser" }).waitFor();
  const attempts = await rows(page, "Delivery attempts");
  assert.deepEqual(
    attempts.map((a) => [a["#"], a.Status, a["Latency ms"], a.Error, a["Response snippet"]]),
    [
      ["1", "no answer", "5004", "timed out after 5000 ms", ""],
      ["2", "410", "31", "the destination answered 410", "<b>gone</b> for good"],
    ],
  );
  assert.ok(
    attempts.every((a) => a.Time !== ""),
    "each attempt has its time",
  );
  assert.equal(
    await page.getByRole("table", { name: "Delivery attempts" }).locator("b").count(),
    0,
    "the snippet is text, not markup",
  );
  await closeAndCheck(opened);
});
