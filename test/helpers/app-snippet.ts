import { spawn } from "node:child_process";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { testDatabaseUrl, waitFor } from "./db.js";
import { stripeHeaders } from "./http.js";
import { freePort } from "./net.js";

/**
 * Runs an app file (the README's library example) as a user would, with DATABASE_URL, PORT and
 * STRIPE_WEBHOOK_SECRET set, and checks that it receives, applies and settles signed Stripe events (a newer update
 * applied, its duplicate answered, an older one settled stale) and that it stops on SIGTERM.
 *
 * @example
 * await checkStripeApp(["--import", "tsx", "app.ts"], { cwd: appDir });
 */
export async function checkStripeApp(args: readonly string[], options: { cwd?: string } = {}): Promise<void> {
  const schema = `snip_${randomBytes(4).toString("hex")}`;
  const base = testDatabaseUrl();
  const admin = new pg.Pool({ connectionString: base, max: 1 });
  await admin.query(`create schema "${schema}"`);
  // The app's own table, found through the search_path, beside the ledger in the same schema.
  await admin.query(
    `create table "${schema}".subscriptions (stripe_id text primary key, status text not null)`,
  );
  await admin.query(`insert into "${schema}".subscriptions values ('sub_snip', 'incomplete')`);
  const port = await freePort();
  const url = new URL(base);
  url.searchParams.set("options", `-c search_path=${schema}`);
  const child = spawn(process.execPath, [...args], {
    ...(options.cwd !== undefined && { cwd: options.cwd }),
    env: {
      ...process.env,
      DATABASE_URL: url.toString(),
      HOOKLEDGER_SCHEMA: schema,
      PORT: String(port),
      STRIPE_WEBHOOK_SECRET: "whsec_snippet",
      LOG_FORMAT: "json",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d));
  child.stderr.on("data", (d: Buffer) => (output += d));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  try {
    const now = Math.floor(Date.now() / 1000);
    const event = (id: string, created: number, status: string) =>
      JSON.stringify({
        id,
        object: "event",
        type: "customer.subscription.updated",
        created,
        data: { object: { id: "sub_snip", object: "subscription", status } },
      });
    const post = async (body: string) => {
      const reply = await fetch(`http://127.0.0.1:${port}/webhooks/stripe`, {
        method: "POST",
        headers: stripeHeaders(body, "whsec_snippet"),
        body,
      });
      return { status: reply.status, body: (await reply.json()) as { status: string } };
    };
    await waitFor(`the app to listen (output: ${output})`, async () =>
      fetch(`http://127.0.0.1:${port}/`).then(
        () => true,
        () => false,
      ),
    );
    const newer = event("evt_snip_2", now - 10, "active");
    assert.deepEqual(await post(newer), { status: 200, body: { status: "accepted", id: "evt_snip_2" } });
    assert.equal((await post(newer)).body.status, "duplicate");
    // The older event once the newer one settled: claimed while both wait, two worker slots may run them in either
    // order, and the guard then applies both (the entity's final state is the same either way).
    await waitFor("the newer event to settle", async () => {
      const { rows } = await admin.query(
        `select count(*)::int as n from "${schema}".events where status = 'settled'`,
      );
      return rows[0].n === 1;
    });
    assert.equal((await post(event("evt_snip_1", now - 20, "past_due"))).body.status, "accepted");
    await waitFor("both events to settle", async () => {
      const { rows } = await admin.query(
        `select count(*)::int as n from "${schema}".events where status = 'settled'`,
      );
      return rows[0].n === 2;
    });
    const { rows } = await admin.query(
      `select dedupe_key, outcome from "${schema}".events order by dedupe_key`,
    );
    assert.deepEqual(rows, [
      { dedupe_key: "evt_snip_1", outcome: "stale" },
      { dedupe_key: "evt_snip_2", outcome: "applied" },
    ]);
    const sub = await admin.query(`select status from "${schema}".subscriptions`);
    assert.equal(sub.rows[0].status, "active");
    child.kill("SIGTERM");
    const code = await Promise.race([
      exited,
      new Promise((r) => setTimeout(() => r("still running"), 15_000)),
    ]);
    assert.equal(
      code,
      0,
      `after SIGTERM the app ${code === "still running" ? "did not exit" : `exited ${code}`}`,
    );
  } finally {
    child.kill("SIGKILL");
    await admin.query(`drop schema "${schema}" cascade`);
    await admin.end();
  }
}
