import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { createReceiver } from "hookledger";
import { silentLogger } from "hookledger";
import { githubProvider } from "hookledger";
import { Handlers } from "hookledger";
import { startWorker } from "hookledger";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { sign } from "@octokit/webhooks-methods";

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const SECRET = "wake-secret";

async function delivery(id: string) {
  const body = JSON.stringify({ zen: id });
  const headers = new Headers({
    "x-github-delivery": id,
    "x-github-event": "ping",
    "x-hub-signature-256": await sign(SECRET, body),
  });
  return {
    method: "POST",
    source: "gh",
    headers,
    body: (async function* () {
      yield Buffer.from(body);
    })(),
  };
}

function setup(wakeupWindowMs?: number) {
  const receiver = createReceiver({
    sources: [{ name: "gh", provider: githubProvider(), secrets: [SECRET], maxBodyBytes: 65_536 }],
    db: t.newPool("ingest"),
    ledger: t.ledger,
    log: silentLogger(),
    ...(wakeupWindowMs !== undefined && { wakeupWindowMs }),
  });
  const worker = startWorker({
    pool: t.newPool("work", 2),
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("gh", "ping", () => {}),
    log: silentLogger(),
    concurrency: 2,
    // Only notifications can make the worker fast in these tests.
    pollIntervalMs: 60_000,
  });
  return { receiver, worker };
}

const settled = (prefix: string, n: number) =>
  waitFor(
    `${n} ${prefix} events settled`,
    async () => {
      const r = await t.pool.query(
        `select count(*)::int as n from "${t.schema}".events where status = 'settled' and dedupe_key like $1`,
        [`${prefix}%`],
      );
      return r.rows[0].n === n;
    },
    15_000,
  );

test("a claim committed quietly inside the wake-up window is announced by the trailing NOTIFY", async () => {
  const { receiver, worker } = setup(1500);
  try {
    await new Promise((r) => setTimeout(r, 300)); // the worker's first look finds nothing and it goes idle
    await receiver.receive(await delivery("window-1")); // notifies in its own transaction
    await settled("window-1", 1); // the worker is idle again, and the window is still open
    await receiver.receive(await delivery("window-2")); // quiet: only the trailing NOTIFY can wake the worker
    await settled("window-", 2);
  } finally {
    await worker.stop(5000);
  }
});

test("a burst of claims through the receiver wakes an idle worker for every one, with fewer NOTIFYs than claims", async () => {
  const { receiver, worker } = setup();
  const listener = new pg.Client({ connectionString: t.url });
  await listener.connect();
  let notifications = 0;
  listener.on("notification", () => {
    notifications++;
  });
  await listener.query(`listen "${t.ledger.channel}"`);
  try {
    await new Promise((r) => setTimeout(r, 300));
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => receiver.receive(await delivery(`burst-${i}`))),
    );
    assert.ok(answers.every((a) => a.status === 200 && a.body.includes("accepted")));
    await settled("burst-", 40);
    assert.ok(notifications >= 1 && notifications < 40, `notifications: ${notifications}`);
  } finally {
    await worker.stop(5000);
    await listener.end();
  }
});
