// The worker benches' backlog: events claimed with claimEvent (public; docs/library-mode.md) exactly as the edge
// writes them, untimed. Used by bench/peers/hookledger-worker.ts and the worker probes, which also share their
// hookledger and their wait for the backlog to drain from here.
import {
  claimEvent,
  createHookledger,
  createPool,
  type Hookledger,
  type Logger,
  ledgerContext,
  stripeEventFromJson,
} from "hookledger";
import type pg from "pg";
import { guardedUpsert } from "../peers/app-table.js";
import { CREATED_BASE, stripeBody, workerEvent } from "./stripe.js";

/**
 * Claims one bench Stripe event as the edge would (claimEvent, public: docs/library-mode.md); throws unless it is
 * new. `notify`: the claim's NOTIFY, which wakes the workers.
 *
 * @example
 * await claimBenchEvent(client, ledgerContext(schema), body, true);
 */
export async function claimBenchEvent(
  client: Parameters<typeof claimEvent>[0],
  ledger: ReturnType<typeof ledgerContext>,
  body: Buffer,
  notify: boolean,
): Promise<void> {
  const parsed = stripeEventFromJson(JSON.parse(body.toString("utf8")) as Record<string, unknown>);
  if (!parsed.ok) throw new Error(`a bench event does not parse: ${parsed.reason}`);
  const claimed = await claimEvent(client, ledger, {
    source: "stripe",
    event: parsed.event,
    body,
    headers: { "content-type": "application/json" },
    secretIndex: 0,
    arrivedVia: "delivery",
    notify,
  });
  if (claimed.status !== "accepted") throw new Error(`${parsed.event.dedupeKey} was a ${claimed.status}`);
}

/** What {@link claimBacklog} fills. */
export interface BacklogOptions {
  readonly connectionString: string;
  readonly schema: string;
  readonly events: number;
  readonly entities: number;
  readonly bodyBytes: number;
}

/**
 * Claims `events` Stripe `customer.subscription.updated` events over `entities` subscriptions into a migrated
 * ledger: 500 claims per commit on 4 connections, so that the untimed setup does not dominate a bench's runtime.
 *
 * @example
 * await claimBacklog({ connectionString, schema, events: 20_000, entities: 2_000, bodyBytes: 2048 });
 */
export async function claimBacklog(options: BacklogOptions): Promise<void> {
  // Untimed setup: the ingest role's 1.5 s statement timeout (meant for a webhook's answer) once cancelled a claim
  // here on a loaded machine and voided the round.
  const pool = createPool({
    connectionString: options.connectionString,
    role: "ingest",
    max: 4,
    statementTimeoutMs: 60_000,
  });
  const ledger = ledgerContext(options.schema);
  let next = 0;
  const lane = async () => {
    const client = await pool.connect();
    try {
      for (;;) {
        const from = next;
        next += 500;
        if (from >= options.events) break;
        await client.query("begin");
        for (let i = from; i < Math.min(from + 500, options.events); i++) {
          const fields = workerEvent(i, options.entities, CREATED_BASE);
          await claimBenchEvent(client, ledger, Buffer.from(stripeBody(fields, options.bodyBytes)), false);
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

/**
 * The probes' hookledger (bench/worker-probe.ts, bench/worker-trace.ts): the bench's one source and job, the
 * version-guarded upsert of bench/peers/app-table.ts for each `customer.subscription.updated`.
 *
 * @example
 * const hl = probeHookledger({ connectionString, schema, concurrency: 10 });
 */
export function probeHookledger(options: {
  readonly connectionString: string;
  readonly schema: string;
  readonly concurrency: number;
  /** The worker's `batchSize` (its default when absent). */
  readonly batchSize?: number;
  readonly log?: Logger;
}): Hookledger {
  const upsert = guardedUpsert(options.schema);
  return createHookledger({
    connectionString: options.connectionString,
    schema: options.schema,
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_probe"] }],
    worker: {
      concurrency: options.concurrency,
      ...(options.batchSize !== undefined && { batchSize: options.batchSize }),
    },
    ...(options.log && { log: options.log }),
  }).on("stripe", "customer.subscription.updated", async (ctx) => {
    const event = ctx.event.payload as { created: number; data: { object: { id: string; status: string } } };
    await ctx.tx.query(upsert, [event.data.object.id, event.created, event.data.object.status]);
  });
}

/**
 * SQL that is true while any event of `schema` is still to run: exactly the pick predicate's statuses, so that it can
 * be answered from the events_due index, which holds only the backlog (docs/architecture.md §3). An event
 * gone dead ends the wait too. The workers' benches poll it; a `count(*)` here once read the whole table at every
 * poll, and the probe counted that backend's CPU as the worker's (docs/benchmarks.md, "What the indexes cost the
 * worker").
 *
 * @example
 * const { rows } = await admin.query<{ pending: boolean }>(backlogPendingSql(schema));
 */
export function backlogPendingSql(schema: string): string {
  return `select exists (select 1 from ${schema}.events where status in ('pending', 'failed')) as pending`;
}

/**
 * Resolves once no event of `schema` is due any more ({@link backlogPendingSql}), polling every 100 ms.
 *
 * @example
 * hl.startWorker(); await backlogDrained(admin, schema);
 */
export async function backlogDrained(admin: pg.ClientBase, schema: string): Promise<void> {
  for (;;) {
    const { rows } = await admin.query<{ pending: boolean }>(backlogPendingSql(schema));
    if (!rows[0]?.pending) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
