// docs/outbox.md: a config file's `outbox` is what `hookledger serve` sends with, as users run it: the built binary,
// a signed Stripe delivery and its duplicate, one POST at the destination under the message's idempotency key.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { createPool, listOutbox, ledgerContext } from "hookledger";
import { signDelivery } from "hookledger/testing";
import { startAlertReceiver } from "../helpers/alert-receiver.js";
import { cleanupAfter, packageConfigFile, runCli, startCli } from "../helpers/cli.js";
import { testDatabaseUrl, waitFor } from "../helpers/db.js";

const { dirs, schemas } = cleanupAfter();

function freshEnv(): NodeJS.ProcessEnv {
  const schema = `obs_${randomBytes(4).toString("hex")}`;
  schemas.push(schema);
  return { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema, PORT: "0" };
}

const CONFIG = `import { Handlers, httpSender, Outbox } from "hookledger";
export default {
  sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_outbox_service"] }],
  handlers: new Handlers().on("stripe", "invoice.paid", async (ctx) => {
    await ctx.outbox.send("crm", { invoice: ctx.event.payload.data.object.id });
  }),
  outbox: new Outbox({ pollIntervalMs: 100 }).on("crm", httpSender({ url: process.env.CRM_URL })),
};
`;

test("hookledger serve with a config file's outbox POSTs a delivery's message once, its duplicate adding none", async () => {
  const crm = await startAlertReceiver(() => 200, "/crm");
  const env: NodeJS.ProcessEnv = { ...freshEnv(), CRM_URL: crm.url };
  const serve = startCli(["serve", "--config", await packageConfigFile(dirs, ".outbox-service-", CONFIG)], {
    env,
  });
  try {
    const [, url] = await serve.waitForLine(/^hookledger listening on (http:\/\/\S+)$/m);
    const body = {
      id: "evt_outbox_service",
      object: "event",
      type: "invoice.paid",
      created: 1767225600,
      data: { object: { id: "in_1" } },
    };
    for (let i = 0; i < 2; i++) {
      const delivery = signDelivery({ provider: "stripe", secret: "whsec_outbox_service", body });
      const answer = await fetch(`${url}/webhooks/stripe`, { method: "POST", ...delivery });
      assert.equal(answer.status, 200);
    }
    await waitFor("the message POSTed", async () => crm.received.length > 0);
    const listed = await runCli(["outbox", "list", "--json"], { env });
    assert.equal(listed.code, 0, listed.stderr);
    const [message] = JSON.parse(listed.stdout) as { idempotencyKey: string; status: string }[];
    await new Promise((resolve) => setTimeout(resolve, 500)); // room for a second POST that must not come
    assert.equal(crm.received.length, 1);
    assert.deepEqual(crm.bodies(), [{ invoice: "in_1" }]);
    assert.equal(crm.received[0]?.headers["idempotency-key"], message?.idempotencyKey);
    const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 1 });
    try {
      const ledger = ledgerContext(String(env.HOOKLEDGER_SCHEMA));
      await waitFor("the message recorded sent", async () => {
        const [m] = await listOutbox(pool, ledger, {}, 10);
        return m?.status === "sent";
      });
    } finally {
      await pool.end();
    }
  } finally {
    assert.equal(await serve.stop("SIGTERM"), 0, serve.output());
    await crm.close();
  }
});

test("hookledger serve with a config file whose outbox is not an Outbox stops at start, naming the field", async () => {
  const file = await packageConfigFile(
    dirs,
    ".outbox-service-",
    `export default {
  sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
  outbox: { crm: async () => {} },
};
`,
  );
  const serve = await runCli(["serve", "--config", file], { env: freshEnv() });
  assert.equal(serve.code, 1, serve.stderr);
  assert.match(serve.stderr, /outbox: expected an Outbox \(`new Outbox\(\)\.on\(name, sender\)`/);
  assert.doesNotMatch(serve.stderr, /\n\s+at /, "no stack trace");
});
