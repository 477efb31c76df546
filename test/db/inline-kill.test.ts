// docs/architecture.md §7: an app process that dies in the middle of its inline handler. Its event is never swallowed: a retry
// while the dead run's lease holds is a duplicate, and the first delivery after the lease runs the event and settles.
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createInlineGuard } from "hookledger";
import { silentLogger } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { NOW_S, STRIPE_SECRETS, send, stripeBody, stripeHeaders } from "../helpers/http.js";
import { inlineSources, serveInline } from "../helpers/inline.js";

const FIXTURE = fileURLToPath(new URL("../fixtures/inline-process.ts", import.meta.url));
// Long enough that the retry below lands inside it on a slow machine, short enough to wait out.
const LEASE_MS = 4000;

let t: TestLedger;
const children: ChildProcessWithoutNullStreams[] = [];
const servers: { close(): Promise<void> }[] = [];

before(async () => {
  t = await freshLedger();
});

after(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const s of servers) await s.close();
  await t.drop();
});

const post = (url: string, payload: string, ageS: number) =>
  send(`${url}/webhooks/stripe`, {
    headers: stripeHeaders(payload, STRIPE_SECRETS[0], NOW_S - ageS),
    body: payload,
  });

async function row(id: string) {
  const { rows } = await t.pool.query<{ status: string; attempts: number; leased: boolean }>(
    `select status, attempts, next_attempt_at > now() as leased
       from ${t.ledger.s}.events where source = 'stripe' and dedupe_key = $1`,
    [id],
  );
  return rows[0];
}

test("an app process killed with SIGKILL mid-handler → a retry within its lease answers 503 in_flight; the first delivery after the lease takes the event over and settles", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE], {
    env: {
      ...process.env,
      HOOKLEDGER_TEST_DATABASE_URL: t.url,
      FIXTURE_SCHEMA: t.schema,
      FIXTURE_LEASE_MS: String(LEASE_MS),
    },
  });
  children.push(child);
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    out += d;
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const printed = (line: RegExp) =>
    waitFor(
      `${line} from the app process`,
      async () => {
        if (child.exitCode !== null) throw new Error(`the app process exited early:\n${out}`);
        return line.test(out);
      },
      60_000,
    );
  await printed(/^listening http:\/\/\S+$/m);
  const childUrl = out.match(/^listening (http:\/\/\S+)$/m)?.[1] ?? "";

  const payload = stripeBody("evt_killed");
  const inFlight = post(childUrl, payload, 0).then(
    (r) => `answered ${r.status}`,
    (error: Error) => `no answer: ${error.message}`,
  );
  await printed(/^in-handler evt_killed$/m);
  child.kill("SIGKILL");
  await exited;
  assert.match(await inFlight, /^no answer/);

  // The app's next instance, on the same ledger.
  let calls = 0;
  const guard = createInlineGuard({
    sources: inlineSources(),
    db: t.newPool("ingest"),
    ledger: t.ledger,
    log: silentLogger(),
    mode: "enforce",
    leaseMs: LEASE_MS,
  });
  const server = await serveInline(guard, (_req, res) => {
    calls++;
    res.end("ok");
  });
  servers.push(server);

  const early = await post(server.url, payload, 30);
  assert.equal((await row("evt_killed"))?.leased, true, "the retry came after the lease: raise LEASE_MS");
  assert.equal(early.status, 503);
  assert.equal(JSON.parse(early.text).error, "in_flight");
  assert.equal(calls, 0);

  await waitFor("the dead run's lease to run out", async () => (await row("evt_killed"))?.leased === false);
  const late = await post(server.url, payload, 60);
  assert.equal(late.text, "ok");
  await waitFor("evt_killed to settle", async () => (await row("evt_killed"))?.status === "settled");
  assert.equal(calls, 1);
  // The killed run recorded nothing; the run that settled is the one attempt counted.
  assert.equal((await row("evt_killed"))?.attempts, 1);
});
