// graphile-worker 0.17, tuned as its performance docs suggest for a full queue: concurrency 10, a local queue of
// 100 jobs, completions and failures batched with no delay, a pool of concurrency + 2. Setup (not timed): its
// migrations, the app table, BENCH_EVENTS jobs added with addJobs (each job's payload the same 2 KB Stripe event the
// hookledger worker gets). On "go" it starts the runner; the bench polls the jobs table until it is empty.
import { makeWorkerUtils, run, runMigrations, type Runner, type Task } from "graphile-worker";
import pg from "pg";
import { CREATED_BASE, stripeBody, workerEvent } from "../lib/stripe.js";
import { appTableDdl, guardedUpsert } from "./app-table.js";
import { required } from "./http-peer.js";

const connectionString = required("DATABASE_URL");
const schema = required("BENCH_SCHEMA"); // graphile-worker's own schema
const appSchema = required("BENCH_APP_SCHEMA");
const events = Number(required("BENCH_EVENTS"));
const entities = Number(required("BENCH_ENTITIES"));
const bodyBytes = Number(required("BENCH_BODY_BYTES"));
const concurrency = Number(process.env.BENCH_WORKER_CONCURRENCY ?? 10);
const upsert = guardedUpsert(appSchema);

interface StripeEvent {
  readonly created: number;
  readonly data: { readonly object: { readonly id: string; readonly status: string } };
}

const apply: Task = async (payload, helpers) => {
  const event = payload as StripeEvent;
  await helpers.query(upsert, [event.data.object.id, event.created, event.data.object.status]);
};

async function main(): Promise<void> {
  await runMigrations({ connectionString, schema });
  const setup = new pg.Client({ connectionString });
  await setup.connect();
  try {
    await setup.query(appTableDdl(appSchema));
  } finally {
    await setup.end();
  }
  const utils = await makeWorkerUtils({ connectionString, schema });
  try {
    for (let from = 0; from < events; from += 1000) {
      const jobs = Array.from({ length: Math.min(1000, events - from) }, (_, k) => ({
        identifier: "apply",
        payload: JSON.parse(stripeBody(workerEvent(from + k, entities, CREATED_BASE), bodyBytes)) as object,
      }));
      await utils.addJobs(jobs);
    }
  } finally {
    await utils.release();
  }
  process.send?.({ phase: "ready" });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  const runner: Runner = await run({
    noHandleSignals: true,
    taskList: { apply },
    preset: {
      worker: {
        connectionString,
        schema,
        concurrentJobs: concurrency,
        maxPoolSize: concurrency + 2,
        localQueue: { size: 100 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
  });
  process.send?.({ phase: "started" });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));
  await runner.stop();
  process.disconnect?.();
}

main().catch((error: Error) => {
  console.error("graphile-worker peer failed:", error);
  process.send?.({ phase: "error", error: error.message });
  process.exitCode = 1;
});
