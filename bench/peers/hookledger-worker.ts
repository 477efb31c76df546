// hookledger's worker, driven through the public API (createHookledger … startWorker) in a process of its own.
// Setup (not timed): migrate, create the app table, claim BENCH_EVENTS events with claimEvent, no worker running. On "go" it starts the worker; the bench polls the ledger until
// the backlog is settled, then sends "stop".
import { claimEvent, createHookledger, createPool, ledgerContext, stripeEventFromJson } from "hookledger";
import pg from "pg";
import { CREATED_BASE, stripeBody, workerEvent } from "../lib/stripe.js";
import { appTableDdl, guardedUpsert } from "./app-table.js";
import { required } from "./http-peer.js";

const schema = required("BENCH_SCHEMA");
const events = Number(required("BENCH_EVENTS"));
const entities = Number(required("BENCH_ENTITIES"));
const bodyBytes = Number(required("BENCH_BODY_BYTES"));
const secret = required("BENCH_STRIPE_SECRET");
const concurrency = process.env.BENCH_WORKER_CONCURRENCY
  ? Number(process.env.BENCH_WORKER_CONCURRENCY)
  : undefined;
const advance = process.env.BENCH_ADVANCE === "1";
const upsert = guardedUpsert(schema);

const hl = createHookledger({
  connectionString: required("DATABASE_URL"),
  schema,
  sources: [{ name: "stripe", provider: "stripe", secrets: [secret] }],
  ...(concurrency !== undefined && { worker: { concurrency } }),
}).on("stripe", "customer.subscription.updated", async (ctx) => {
  // ctx.advance(): the ledger's own version guard on the subscription (Stripe's version is the event's created).
  if (advance && !(await ctx.advance())) return;
  const event = ctx.event.payload;
  await ctx.tx.query(upsert, [event.data.object.id, event.created, event.data.object.status]);
});

// claimEvent (public; docs/library-mode.md) on a client inside the caller's transaction: 500 claims per commit on
// 4 connections, so that the untimed setup does not dominate the bench's runtime. Rows are what the edge writes.
async function claimAll(): Promise<void> {
  // Untimed setup: the ingest role's 1.5 s statement timeout (meant for a webhook's answer) once cancelled a claim
  // here on a loaded machine and voided the round.
  const pool = createPool({
    connectionString: required("DATABASE_URL"),
    role: "ingest",
    max: 4,
    statementTimeoutMs: 60_000,
  });
  const ledger = ledgerContext(schema);
  let next = 0;
  const lane = async () => {
    const client = await pool.connect();
    try {
      for (;;) {
        const from = next;
        next += 500;
        if (from >= events) break;
        await client.query("begin");
        for (let i = from; i < Math.min(from + 500, events); i++) {
          const body = Buffer.from(stripeBody(workerEvent(i, entities, CREATED_BASE), bodyBytes));
          const parsed = stripeEventFromJson(JSON.parse(body.toString("utf8")) as Record<string, unknown>);
          if (!parsed.ok) throw new Error(`event ${i} does not parse: ${parsed.reason}`);
          const claimed = await claimEvent(client, ledger, {
            source: "stripe",
            event: parsed.event,
            body,
            headers: { "content-type": "application/json" },
            secretIndex: 0,
            arrivedVia: "delivery",
            notify: false,
          });
          if (claimed.status !== "accepted") throw new Error(`event ${i} was a ${claimed.status}`);
        }
        await client.query("commit");
      }
    } finally {
      client.release();
    }
  };
  try {
    await Promise.all(Array.from({ length: 4 }, lane));
  } finally {
    await pool.end();
  }
}

async function main(): Promise<void> {
  await hl.migrate();
  const setup = new pg.Client({ connectionString: required("DATABASE_URL") });
  await setup.connect();
  try {
    await setup.query(appTableDdl(schema));
  } finally {
    await setup.end();
  }
  await claimAll();
  process.send?.({ phase: "ready" });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  hl.startWorker();
  process.send?.({ phase: "started" });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  await hl.close();
  process.disconnect?.();
}

main().catch((error: Error) => {
  console.error("hookledger worker peer failed:", error);
  process.send?.({ phase: "error", error: error.message });
  process.exitCode = 1;
});
