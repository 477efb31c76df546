// The forwarding latency bench's peer (bench/contenders/forward-latency.ts): hookledger's worker forwarding with
// `ordering: "entity"` while events arrive at a steady BENCH_PACED_RATE for BENCH_PACED_SECONDS, claimed here every
// 20 ms as the edge claims them (claimEvent, with its NOTIFY). Each event's claim commit time (ms since the epoch)
// goes to the bench at the end, which subtracts it from the destination's receipt time.
import { createHookledger, createPool, ledgerContext } from "hookledger";
import { CREATED_BASE, stripeBody, workerEvent } from "../lib/stripe.js";
import { claimBenchEvent } from "../lib/worker-ledger.js";
import { required } from "./http-peer.js";

const schema = required("BENCH_SCHEMA");
const rate = Number(required("BENCH_PACED_RATE"));
const seconds = Number(required("BENCH_PACED_SECONDS"));
const entities = Number(required("BENCH_PACED_ENTITIES"));
const bodyBytes = Number(required("BENCH_BODY_BYTES"));
const connectionString = required("DATABASE_URL");

const hl = createHookledger({
  connectionString,
  schema,
  sources: [
    {
      name: "stripe",
      provider: "stripe",
      secrets: [required("BENCH_STRIPE_SECRET")],
      forward: {
        url: required("BENCH_FORWARD_URL"),
        secret: required("BENCH_FORWARD_SECRET"),
        ordering: "entity",
      },
    },
  ],
});

async function main(): Promise<void> {
  await hl.migrate();
  const pool = createPool({ connectionString, role: "ingest", max: 2 });
  const ledger = ledgerContext(schema);
  const bodies = Array.from({ length: rate * seconds }, (_, i) =>
    Buffer.from(stripeBody(workerEvent(i, entities, CREATED_BASE), bodyBytes)),
  );
  process.send?.({ phase: "ready" });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  const stop = new Promise<void>((resolve) => process.once("message", () => resolve()));
  hl.startWorker();
  const claimedAt: number[] = [];
  const began = Date.now();
  let next = 0;
  while (next < bodies.length) {
    const due = Math.min(bodies.length, Math.floor(((Date.now() - began) / 1000) * rate));
    if (due > next) {
      const client = await pool.connect();
      try {
        await client.query("begin");
        for (const body of bodies.slice(next, due)) await claimBenchEvent(client, ledger, body, true);
        await client.query("commit");
      } finally {
        client.release();
      }
      const at = Date.now();
      for (let i = next; i < due; i++) claimedAt[i] = at;
      next = due;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  process.send?.({ phase: "claimed", claimedAt });
  await stop;
  await hl.close();
  await pool.end();
  process.disconnect?.();
}

main().catch((error: Error) => {
  console.error("paced forward peer failed:", error);
  process.send?.({ phase: "error", error: error.message });
  process.exitCode = 1;
});
