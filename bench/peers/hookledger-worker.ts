// hookledger's worker, driven through the public API (createHookledger … startWorker) in a process of its own.
// Setup (not timed): migrate, create the app table, claim BENCH_EVENTS events (lib/worker-ledger.ts), no worker running. On "go" it starts the worker; the bench polls the ledger until
// the backlog is settled, then sends "stop".
import { createHookledger, silentLogger } from "hookledger";
import pg from "pg";
import { claimBacklog } from "../lib/worker-ledger.js";
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

// The PgBouncer rows (bench/contenders/workers.ts): the worker through a pooler in transaction mode; the setup
// below still goes straight to Postgres.
const pooled = process.env.BENCH_POOLER_URL;
const hl = createHookledger({
  connectionString: pooled ?? required("DATABASE_URL"),
  ...(pooled && { pooler: "transaction" as const }),
  schema,
  sources: [
    {
      name: "stripe",
      provider: "stripe",
      secrets: [secret],
      // The forwarding bench (bench/contenders/forward.ts): each event also forwarded, signed, to its destination.
      ...(process.env.BENCH_FORWARD_URL && {
        forward: { url: process.env.BENCH_FORWARD_URL, secret: required("BENCH_FORWARD_SECRET") },
      }),
    },
  ],
  ...(concurrency !== undefined && { worker: { concurrency } }),
  // bench/cost.ts: the worker without its `event settled` lines.
  ...(process.env.BENCH_WITHOUT === "logs" && { log: silentLogger() }),
});
// Forward mode stands in for an app that is not a Node process: no handler, as the fetch loop has none.
if (!process.env.BENCH_FORWARD_URL)
  hl.on("stripe", "customer.subscription.updated", async (ctx) => {
    // ctx.advance(): the ledger's own version guard on the subscription (Stripe's version is the event's created).
    if (advance && !(await ctx.advance())) return;
    const event = ctx.event.payload;
    await ctx.tx.query(upsert, [event.data.object.id, event.created, event.data.object.status]);
  });

async function main(): Promise<void> {
  await hl.migrate();
  const setup = new pg.Client({ connectionString: required("DATABASE_URL") });
  await setup.connect();
  try {
    await setup.query(appTableDdl(schema));
  } finally {
    await setup.end();
  }
  await claimBacklog({ connectionString: required("DATABASE_URL"), schema, events, entities, bodyBytes });
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
