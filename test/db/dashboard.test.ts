import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import {
  createDashboard,
  createPool,
  Handlers,
  Outbox,
  resolveConfig,
  SendError,
  type Service,
  silentLogger,
  startService,
} from "hookledger";
import { signDelivery } from "hookledger/testing";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { seedEvents } from "../helpers/ledger-rows.js";

// The dashboard as `hookledger serve` mounts it: a real service on a fresh ledger, real signed deliveries, a real
// worker whose handler fails for one type, and every request over HTTP as a browser would send it.

const TOKEN = "dashboard-token-0123456789";
const OTHER = "another-token-0123456789";
const SECRET = "whsec_dashboard_test";
let t: TestLedger;
let service: Service;
let admin: string;
// The outbox's "crm" sender refuses every message for good while this is true.
let crmRefuses = true;

before(async () => {
  t = await freshLedger();
  const handlers = new Handlers()
    .on("stripe", "invoice.paid", async (ctx) => {
      await ctx.advance(
        "invoice",
        String((ctx.event.payload as { data: { object: { id: string } } }).data.object.id),
        ctx.event.occurredAt ?? 0,
      );
    })
    .on("stripe", "charge.failed", async (ctx) => {
      throw new Error(`the charge handler broke on attempt ${ctx.event.attempt}`);
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
        sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_old_dashboard", SECRET] }],
        handlers,
        outbox,
        dashboard: {
          users: [
            { name: "alice", token: TOKEN },
            { name: "bob", token: OTHER },
          ],
        },
        worker: { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 }, pollIntervalMs: 50 },
      },
      {},
    ),
    { log: silentLogger(), serve: true, work: true },
  );
  admin = service.adminUrl as string;
});
after(async () => {
  await service?.stop();
  await t.drop();
});

let seq = 0;
async function deliver(type: string, objectId: string, created: number): Promise<string> {
  seq += 1;
  const id = `evt_dash_${seq}`;
  const body = JSON.stringify({ id, type, created, data: { object: { id: objectId, object: "invoice" } } });
  const signed = signDelivery({ provider: "stripe", secret: SECRET, body });
  const response = await fetch(`${service.url}/webhooks/stripe`, {
    method: "POST",
    headers: signed.headers,
    body: signed.body,
  });
  assert.equal(response.status, 200);
  return id;
}

async function signIn(token = TOKEN): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${admin}/dashboard/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: admin },
    body: new URLSearchParams({ token }),
    redirect: "manual",
  });
  assert.equal(response.status, 303);
  const setCookie = response.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0] as string;
  const session = await (await fetch(`${admin}/dashboard/api/session`, { headers: { cookie } })).json();
  return { cookie, csrf: session.csrf };
}

const api = async (path: string, cookie: string) => {
  const response = await fetch(`${admin}/dashboard/api/${path}`, { headers: { cookie } });
  return { status: response.status, body: await response.json() };
};

test("dashboardUrl is on the admin listener, never on the webhook port", async () => {
  assert.equal(service.dashboardUrl, `${admin}/dashboard/`);
  assert.equal((await fetch(`${service.url}/dashboard/`, { redirect: "manual" })).status, 404);
});

test("GET /dashboard/ without a session redirects to the sign-in page, and the API answers 401 with no data", async () => {
  await deliver("invoice.paid", "in_secret", 1_700_000_000);
  const page = await fetch(`${admin}/dashboard/`, { redirect: "manual" });
  assert.equal(page.status, 303);
  assert.equal(page.headers.get("location"), "/dashboard/login");
  const listed = await fetch(`${admin}/dashboard/api/events`);
  assert.equal(listed.status, 401);
  assert.doesNotMatch(await listed.text(), /evt_dash/);
  const login = await fetch(`${admin}/dashboard/login`);
  assert.equal(login.status, 200);
  assert.match(await login.text(), /<label for="token">Access token<\/label>/);
});

test("POST /dashboard/login with a wrong token answers 401 and sets no cookie; the right one an HttpOnly SameSite cookie", async () => {
  const wrong = await fetch(`${admin}/dashboard/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: admin },
    body: new URLSearchParams({ token: `${TOKEN}x` }),
    redirect: "manual",
  });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.headers.get("set-cookie"), null);
  const right = await fetch(`${admin}/dashboard/login`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: admin },
    body: new URLSearchParams({ token: TOKEN }),
    redirect: "manual",
  });
  assert.equal(right.status, 303);
  const cookie = right.headers.get("set-cookie") ?? "";
  assert.match(cookie, /^hookledger_session=/);
  assert.match(cookie, /; HttpOnly/);
  assert.match(cookie, /; SameSite=Strict/);
  assert.match(cookie, /; Path=\/dashboard/);
  assert.doesNotMatch(cookie, new RegExp(TOKEN));
});

test("a session cookie whose user was changed or whose MAC was cut is refused", async () => {
  const { cookie } = await signIn();
  const [name, value] = cookie.split("=") as [string, string];
  const [, expires, mac] = value.split(".") as [string, string, string];
  const asBob = `${name}=${Buffer.from("bob").toString("base64url")}.${expires}.${mac}`;
  assert.equal((await api("events", asBob)).status, 401);
  assert.equal((await api("events", `${cookie.slice(0, -2)}`)).status, 401);
  assert.equal((await api("events", cookie)).status, 200);
});

test("GET /dashboard/api/events pages newest first with a cursor, every event exactly once, and filters", async () => {
  const { cookie } = await signIn();
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push(await deliver("customer.updated", `cus_${i}`, 1_700_000_000 + i));
  const seen: string[] = [];
  let cursor: string | undefined;
  do {
    const { status, body } = await api(
      `events?type=customer.updated&limit=3${cursor ? `&cursor=${cursor}` : ""}`,
      cookie,
    );
    assert.equal(status, 200);
    assert.ok(body.events.length <= 3);
    seen.push(...body.events.map((e: { dedupeKey: string }) => e.dedupeKey));
    cursor = body.next;
  } while (cursor);
  assert.deepEqual(seen, [...ids].reverse());

  const bySearch = await api(`events?id=${ids[2]}`, cookie);
  assert.deepEqual(
    bySearch.body.events.map((e: { dedupeKey: string }) => e.dedupeKey),
    [ids[2]],
  );
  const none = await api("events?source=github", cookie);
  assert.deepEqual(none.body.events, []);
  const future = await api(
    `events?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`,
    cookie,
  );
  assert.deepEqual(future.body.events, []);
});

test("GET /dashboard/api/event shows the payload, the matched secret, every failed attempt with its stack, and the raw body byte for byte", async () => {
  const { cookie } = await signIn();
  const id = await deliver("charge.failed", "ch_1", 1_700_000_100);
  await waitFor("the event to die after two attempts", async () => {
    const { body } = await api(`event?source=stripe&key=${id}`, cookie);
    return body.event?.status === "dead";
  });
  const { body } = await api(`event?source=stripe&key=${id}`, cookie);
  assert.equal(body.event.type, "charge.failed");
  assert.equal(body.event.secretIndex, 1);
  assert.equal(body.event.arrivedVia, "delivery");
  assert.deepEqual(body.event.payload.data.object.id, "ch_1");
  assert.equal(JSON.stringify(body).includes("stripe-signature"), false);
  assert.deepEqual(
    body.attempts.map((a: { attempt: number }) => a.attempt),
    [1, 2],
  );
  // One record per attempt, with that attempt's own error: none when the pick counts the next attempt.
  for (const a of body.attempts) {
    assert.match(a.error, new RegExp(`^the charge handler broke on attempt ${a.attempt}\n\\s+at `));
  }
  const raw = await fetch(`${admin}/dashboard/api/body?source=stripe&key=${id}`, { headers: { cookie } });
  assert.equal(raw.headers.get("content-disposition"), `attachment; filename="stripe-${id}.body"`);
  const { rows } = await t.pool.query(
    `select b.body from ${t.ledger.s}.event_bodies b where b.dedupe_key = $1`,
    [id],
  );
  assert.deepEqual(Buffer.from(await raw.arrayBuffer()), rows[0].body);
});

test("GET /dashboard/api/event shows the entity's history: which event applied and which was stale", async () => {
  const { cookie } = await signIn();
  const newer = await deliver("invoice.paid", "in_hist", 1_700_000_500);
  // The older event once the newer one settled: claimed while both wait, two worker slots may run them in either
  // order, and the guard then applies both.
  await waitFor(
    "the newer settled",
    async () => (await api(`event?source=stripe&key=${newer}`, cookie)).body.event?.status === "settled",
  );
  const older = await deliver("invoice.paid", "in_hist", 1_700_000_400);
  await waitFor("both settled", async () => {
    const { body } = await api(`events?entity=invoice:in_hist`, cookie);
    return body.events.length === 2 && body.events.every((e: { status: string }) => e.status === "settled");
  });
  const { body } = await api(`event?source=stripe&key=${older}`, cookie);
  // A settled event that never failed has no attempt in its history.
  assert.deepEqual(body.attempts, []);
  assert.equal(body.entity.applied.dedupeKey, newer);
  const outcomes = Object.fromEntries(
    body.entity.events.map((e: { dedupeKey: string; outcome: string }) => [e.dedupeKey, e.outcome]),
  );
  assert.deepEqual(outcomes, { [newer]: "applied", [older]: "stale" });
});

test("POST /dashboard/api/retry without the CSRF header, or from another origin, is refused and changes nothing", async () => {
  const { cookie, csrf } = await signIn();
  const id = await deliver("charge.failed", "ch_csrf", 1_700_000_200);
  await waitFor(
    "dead",
    async () => (await api(`event?source=stripe&key=${id}`, cookie)).body.event?.status === "dead",
  );
  const body = JSON.stringify({ events: [{ source: "stripe", dedupeKey: id }] });
  const noToken = await fetch(`${admin}/dashboard/api/retry`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json" },
    body,
  });
  assert.equal(noToken.status, 403);
  const crossSite = await fetch(`${admin}/dashboard/api/retry`, {
    method: "POST",
    headers: {
      cookie,
      "content-type": "application/json",
      "x-hookledger-csrf": csrf,
      origin: "http://evil.example",
    },
    body,
  });
  assert.equal(crossSite.status, 403);
  const otherSession = await signIn(OTHER);
  const wrongToken = await fetch(`${admin}/dashboard/api/retry`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json", "x-hookledger-csrf": otherSession.csrf },
    body,
  });
  assert.equal(wrongToken.status, 403);
  assert.equal((await api(`event?source=stripe&key=${id}`, cookie)).body.event.status, "dead");
  assert.deepEqual((await api("actions", cookie)).body.actions, []);
});

test("POST /dashboard/api/retry and requeue run dead events again and record who did what", async () => {
  const { cookie, csrf } = await signIn(OTHER);
  const a = await deliver("charge.failed", "ch_a", 1_700_000_300);
  const b = await deliver("charge.failed", "ch_b", 1_700_000_301);
  for (const id of [a, b]) {
    await waitFor(
      "dead",
      async () => (await api(`event?source=stripe&key=${id}`, cookie)).body.event?.status === "dead",
    );
  }
  const post = (route: string, body: unknown) =>
    fetch(`${admin}/dashboard/api/${route}`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-hookledger-csrf": csrf, origin: admin },
      body: JSON.stringify(body),
    });
  const retried = await post("retry", { events: [{ source: "stripe", dedupeKey: a }] });
  assert.equal(retried.status, 200);
  assert.deepEqual((await retried.json()).counts, { retried: 1 });
  const count = await api("requeue-count?status=dead&type=charge.failed", cookie);
  assert.ok(count.body.count >= 1);
  const requeued = await post("requeue", { filter: { status: "dead", type: "charge.failed" } });
  assert.equal(requeued.status, 200);
  const { actions } = (await api("actions", cookie)).body;
  assert.deepEqual(
    actions.map((x: { actor: string; action: string }) => [x.actor, x.action]),
    [
      ["bob", "requeue"],
      ["bob", "retry"],
    ],
  );
  assert.deepEqual(actions[1].events, [{ source: "stripe", dedupeKey: a }]);
  assert.deepEqual(actions[1].result, { retried: 1 });
  // The retry gave it a third attempt; the requeue may give it a fourth, if that one failed first.
  await waitFor("the retried event's third attempt", async () => {
    const { body } = await api(`event?source=stripe&key=${a}`, cookie);
    return body.attempts.length >= 3;
  });
  const { attempts } = (await api(`event?source=stripe&key=${a}`, cookie)).body;
  assert.deepEqual(
    attempts.slice(0, 3).map((x: { attempt: number }) => x.attempt),
    [1, 2, 3],
  );
});

test("the dashboard answers a bad query 400 naming the field, an unknown route 404, a body over 64 KB 413, and never a stack", async () => {
  const { cookie, csrf } = await signIn();
  for (const [path, field] of [
    ["events?cursor=nonsense", "cursor"],
    ["events?status=bogus", "status"],
    ["events?since=yesterday", "since"],
    ["event?source=stripe", "source and key"],
    ["health?window=7d", "window"],
    ["requeue-count?status=settled", "status"],
  ] as const) {
    const { status, body } = await api(path, cookie);
    assert.equal(status, 400, path);
    assert.equal(body.error, "bad_request");
    assert.ok(body.message.startsWith(field), `${path}: ${body.message}`);
  }
  assert.equal((await api("nowhere", cookie)).status, 404);
  const action = (body: string) =>
    fetch(`${admin}/dashboard/api/retry`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-hookledger-csrf": csrf, origin: admin },
      body,
    });
  assert.equal((await action("{not json")).status, 400);
  assert.equal((await action(`{"events": "${"x".repeat(70_000)}"}`)).status, 413);
  assert.equal((await api("event?source=stripe&key=evt_missing", cookie)).status, 404);
});

test("GET /dashboard/api/health counts the deliveries and settle times of the window", async () => {
  const { cookie } = await signIn();
  await deliver("customer.updated", "cus_health", 1_700_000_900);
  await waitFor("the delivery counted", async () => {
    const { body } = await api("health?window=1h", cookie);
    return body.sources.some((s: { uniqueEvents: number }) => s.uniqueEvents > 0);
  });
  const { body } = await api("health?window=1h", cookie);
  assert.equal(body.bucketMs, 60_000);
  assert.ok(body.buckets.length >= 60 && body.buckets.length <= 61, String(body.buckets.length));
  assert.ok(
    body.buckets.some(
      (b: { settled: number; settleP99: number | null }) => b.settled > 0 && b.settleP99 !== null,
    ),
  );
});

test("createDashboard refuses a user whose token is shorter than 16 characters", () => {
  assert.throws(
    () => createDashboard({ db: t.pool, ledger: t.ledger, users: [{ name: "eve", token: "" }] }),
    /the token of user 'eve' needs 16 characters or more/,
  );
});

test("POST /dashboard/login answers 429 with Retry-After after ten wrong tokens a minute, even to the right token", async () => {
  const bed = createServer(
    createDashboard({ db: t.pool, ledger: t.ledger, users: [{ name: "carol", token: TOKEN }] }).listener,
  );
  await new Promise<void>((resolve) => bed.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(bed.address() as AddressInfo).port}`;
  const attempt = (token: string) =>
    fetch(`${base}/dashboard/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
      body: new URLSearchParams({ token }),
      redirect: "manual",
    });
  try {
    for (let i = 0; i < 10; i++) assert.equal((await attempt(`wrong-token-${i}-0123456789`)).status, 401);
    const eleventh = await attempt("wrong-token-x-0123456789");
    assert.equal(eleventh.status, 429);
    assert.ok(Number(eleventh.headers.get("retry-after")) >= 1);
    const right = await attempt(TOKEN);
    assert.equal(right.status, 429);
    assert.equal(right.headers.get("set-cookie"), null);
  } finally {
    bed.close();
  }
});

test("a dashboard query past its pool's statement timeout answers 503 too_slow, not 500", async () => {
  const db = createPool({ connectionString: t.url, role: "admin", max: 2, statementTimeoutMs: 200 });
  const bed = createServer(
    createDashboard({ db, ledger: t.ledger, users: [{ name: "dave", token: TOKEN }] }).listener,
  );
  await new Promise<void>((resolve) => bed.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(bed.address() as AddressInfo).port}`;
  const locker = await t.pool.connect();
  try {
    const login = await fetch(`${base}/dashboard/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
      body: new URLSearchParams({ token: TOKEN }),
      redirect: "manual",
    });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] as string;
    await locker.query("begin");
    await locker.query(`lock table ${t.ledger.s}.events in access exclusive mode`);
    const listed = await fetch(`${base}/dashboard/api/events`, { headers: { cookie } });
    assert.equal(listed.status, 503);
    assert.equal((await listed.json()).error, "too_slow");
  } finally {
    await locker.query("rollback");
    locker.release();
    bed.close();
    await db.end();
  }
});

test("POST /dashboard/login marks the cookie Secure behind a trusted TLS proxy, and only there", async () => {
  const cookieOf = async (trustProxy: boolean) => {
    const bed = createServer(
      createDashboard({ db: t.pool, ledger: t.ledger, users: [{ name: "erin", token: TOKEN }], trustProxy })
        .listener,
    );
    await new Promise<void>((resolve) => bed.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(bed.address() as AddressInfo).port}`;
    try {
      const response = await fetch(`${base}/dashboard/login`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          origin: base,
          "x-forwarded-proto": "https",
        },
        body: new URLSearchParams({ token: TOKEN }),
        redirect: "manual",
      });
      return response.headers.get("set-cookie") ?? "";
    } finally {
      bed.close();
    }
  };
  assert.match(await cookieOf(true), /; Secure$/);
  assert.doesNotMatch(await cookieOf(false), /Secure/);
});

test("GET /dashboard/api/event records an attempt that ended unrecorded (its worker died) under that attempt's number", async () => {
  const { cookie } = await signIn();
  await seedEvents(t.pool, t.ledger, [
    { source: "stripe", id: "evt_dash_crashed", type: "customer.updated", attempts: 1, nextAttemptIn: 3600 },
  ]);
  // As a worker killed during attempt 1 leaves it: counted and stamped, never recorded; due again now.
  await t.pool.query(
    `update ${t.ledger.s}.events set attempt_started_at = now() - interval '1 minute', next_attempt_at = now()
     where dedupe_key = 'evt_dash_crashed'`,
  );
  await waitFor("the event settled on its second attempt", async () => {
    const { body } = await api("event?source=stripe&key=evt_dash_crashed", cookie);
    return body.event?.status === "settled";
  });
  const { body } = await api("event?source=stripe&key=evt_dash_crashed", cookie);
  assert.equal(body.event.attempts, 2);
  assert.deepEqual(
    body.attempts.map((a: { attempt: number; error: string }) => [a.attempt, a.error.slice(0, 40)]),
    [[1, "attempt 1 ended without an outcome: the "]],
  );
});

test("GET /dashboard/api/outbox lists dead messages, outbox-message shows one, outbox-retry sends it again and is recorded", async () => {
  const { cookie, csrf } = await signIn();
  const id = await deliver("invoice.voided", "in_void", 1_700_000_400);
  const dead = async () =>
    (await api("outbox?status=dead", cookie)).body.messages.filter(
      (m: { eventId: string }) => m.eventId === id,
    );
  await waitFor("the message dead", async () => (await dead()).length === 1);
  const [listed] = await dead();
  assert.equal(listed.sender, "crm");
  assert.equal(listed.lastError, "the CRM refused it");
  assert.equal(listed.lastStatus, 422);
  assert.equal(listed.payload, undefined, "the list leaves payloads out");
  const shown = await api(`outbox-message?key=${encodeURIComponent(listed.idempotencyKey)}`, cookie);
  assert.equal(shown.status, 200);
  assert.deepEqual(shown.body.message.payload, { voided: id });
  assert.equal((await api("outbox-message?key=hl_nosuchkey", cookie)).status, 404);

  crmRefuses = false;
  const retried = await fetch(`${admin}/dashboard/api/outbox-retry`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json", "x-hookledger-csrf": csrf, origin: admin },
    body: JSON.stringify({ keys: [listed.idempotencyKey] }),
  });
  assert.equal(retried.status, 200);
  assert.deepEqual((await retried.json()).retried, [listed.idempotencyKey]);
  await waitFor("the retried message sent", async () => {
    const { body } = await api(`outbox-message?key=${encodeURIComponent(listed.idempotencyKey)}`, cookie);
    return body.message.status === "sent";
  });
  const [action] = (await api("actions", cookie)).body.actions;
  assert.deepEqual(
    [action.actor, action.action, action.events, action.result],
    ["alice", "outbox-retry", [listed.idempotencyKey], { retried: 1 }],
  );
});

test("the dashboard's outbox routes answer bad input 400 naming the field and retry nothing", async () => {
  const { cookie, csrf } = await signIn();
  for (const [path, field] of [
    ["outbox?status=bogus", "status"],
    ["outbox-message", "key"],
  ] as const) {
    const { status, body } = await api(path, cookie);
    assert.equal(status, 400, path);
    assert.ok(body.message.startsWith(field), `${path}: ${body.message}`);
  }
  const before = (await api("actions", cookie)).body.actions.length;
  for (const body of [{ keys: [] }, { keys: "hl_x" }, { keys: [1, 2] }]) {
    const answer = await fetch(`${admin}/dashboard/api/outbox-retry`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "x-hookledger-csrf": csrf, origin: admin },
      body: JSON.stringify(body),
    });
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.match((await answer.json()).message, /^keys: a list of 1 to 500 idempotency keys/);
  }
  assert.equal((await api("actions", cookie)).body.actions.length, before, "nothing recorded");
});

test("GET /dashboard/api/forwards lists a disabled and a paused destination with their queues; outbox-message of a forward includes its attempts", async () => {
  const { cookie } = await signIn();
  const s = t.ledger.s;
  await t.pool.query(
    `insert into ${s}.forward_destinations (source, disabled_at, disabled_reason, failures, paused_until)
     values ('shop', now() - interval '5 minutes', 'the destination answered 410 Gone', 3, null),
       ('crm_mirror', null, null, 5, now() + interval '10 minutes'),
       ('ledger_copy', null, null, 0, now() - interval '1 minute')`,
  );
  await t.pool.query(
    `insert into ${s}.outbox (source, dedupe_key, message_key, sender, idempotency_key, payload, status, attempts)
     values ('shop', 'evt_fwd_pending', '#forward', 'forward', 'hl_fwd_dash_pending', '{}'::jsonb, 'pending', 0),
       ('shop', 'evt_fwd_dead', '#forward', 'forward', 'hl_fwd_dash_dead', '{}'::jsonb, 'dead', 2),
       ('shop', 'evt_fwd_stale', '#forward', 'forward', 'hl_fwd_dash_stale', '{}'::jsonb, 'stale', 0),
       ('shop', 'evt_fwd_dead', '#0', 'crm', 'hl_fwd_dash_crm', '{}'::jsonb, 'sent', 1)`,
  );
  await t.pool.query(
    `insert into ${s}.forward_attempts (source, dedupe_key, attempt, status, ms, error, snippet)
     values ('shop', 'evt_fwd_dead', 1, null, 5003, 'timed out after 5000 ms', null),
       ('shop', 'evt_fwd_dead', 2, 410, 12, 'the destination answered 410', '{"error":"gone"}'),
       ('shop', 'evt_fwd_other', 1, 500, 7, 'the destination answered 500', 'oops')`,
  );

  const listed = await api("forwards", cookie);
  assert.equal(listed.status, 200);
  const bySource = Object.fromEntries(
    listed.body.destinations.map((d: { source: string }) => [d.source, d] as const),
  );
  assert.deepEqual(Object.keys(bySource), ["crm_mirror", "ledger_copy", "shop"], "in name order");
  const { disabledAt, ...shop } = bySource.shop;
  assert.ok(Date.now() - Date.parse(disabledAt) >= 4 * 60_000, `disabled 5 minutes ago: ${disabledAt}`);
  assert.deepEqual(shop, {
    source: "shop",
    disabledReason: "the destination answered 410 Gone",
    failures: 3,
    pausedUntil: null,
    pending: 1,
    dead: 1,
    sent: 0,
  });
  assert.equal(bySource.crm_mirror.disabledAt, null);
  assert.ok(Date.parse(bySource.crm_mirror.pausedUntil) > Date.now(), "paused for 10 more minutes");
  assert.equal(bySource.ledger_copy.pausedUntil, null, "a pause that is over is not shown");

  const shown = await api("outbox-message?key=hl_fwd_dash_dead", cookie);
  assert.equal(shown.status, 200);
  assert.equal(shown.body.message.sender, "forward");
  assert.deepEqual(
    shown.body.attempts.map(
      (a: {
        attempt: number;
        status: number | null;
        ms: number;
        error: string | null;
        snippet: string | null;
      }) => [a.attempt, a.status, a.ms, a.error, a.snippet],
    ),
    [
      [1, null, 5003, "timed out after 5000 ms", null],
      [2, 410, 12, "the destination answered 410", '{"error":"gone"}'],
    ],
  );
  assert.ok(shown.body.attempts.every((a: { at: string }) => !Number.isNaN(Date.parse(a.at))));
  assert.deepEqual((await api("outbox-message?key=hl_fwd_dash_pending", cookie)).body.attempts, []);
  assert.equal(
    (await api("outbox-message?key=hl_fwd_dash_crm", cookie)).body.attempts,
    null,
    "a message of another sender has no forward attempts",
  );
  const stale = await api("outbox?status=stale", cookie);
  assert.deepEqual(
    stale.body.messages.map((m: { idempotencyKey: string }) => m.idempotencyKey),
    ["hl_fwd_dash_stale"],
  );
});
