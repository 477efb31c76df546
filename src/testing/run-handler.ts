import { randomUUID } from "node:crypto";
import { createPool, type Pool, type PoolClient } from "../db/pool.js";
import type { ArrivedVia } from "../ledger/claim.js";
import { ledgerContext } from "../ledger/context.js";
import type { SendOptions } from "../outbox/writer.js";
import type { PickedEvent } from "../ledger/pick.js";
import { attemptContext } from "../worker/context.js";
import type { Handler } from "../worker/handlers.js";

/**
 * The event a test hands to one handler, as the worker would have picked it from the ledger.
 *
 * @example
 * const event: TestEvent = { source: "stripe", type: "invoice.paid", payload: { id: "evt_1" } };
 */
export interface TestEvent<P = unknown> {
  readonly source: string;
  readonly type: string;
  readonly payload: P;
  /** `ctx.event.id`, the dedupe key. @defaultValue a random `test_…` id */
  readonly id?: string;
  /** What `ctx.advance()` without arguments guards. @example { type: "subscription", id: "sub_1", version: 1767225600 } */
  readonly entity?: { readonly type: string; readonly id: string; readonly version: number | string | Date };
  /** @defaultValue null */
  readonly occurredAt?: Date;
  /** @defaultValue now */
  readonly receivedAt?: Date;
  /** `ctx.event.attempt`. @defaultValue 1 */
  readonly attempt?: number;
  /** @defaultValue "delivery" */
  readonly arrivedVia?: ArrivedVia;
}

/**
 * Where and what to run: a migrated ledger (`pool` or `connectionString`, and its `schema`), the event, and an
 * optional look at the transaction before it is rolled back.
 *
 * @example
 * const options: RunHandlerOptions<{ id: string }, number> = {
 *   connectionString: "postgres://postgres@127.0.0.1:5432/test",
 *   event: { source: "stripe", type: "invoice.paid", payload: { id: "in_1" } },
 *   inspect: async (tx) => (await tx.query("select 1")).rowCount ?? 0,
 * };
 */
export interface RunHandlerOptions<P = unknown, R = undefined> {
  /** A pool on the database; left open. Either this or `connectionString`. */
  readonly pool?: Pool;
  /** A database URL; a one-connection pool is opened and closed around the run. */
  readonly connectionString?: string;
  /** The ledger's schema, migrated (`hookledger migrate`). @defaultValue "hookledger" */
  readonly schema?: string;
  readonly event: TestEvent<P>;
  /**
   * Runs inside the event's transaction after the handler (after the rollback of its writes if it threw, as in
   * the worker) and before the final rollback; its result is returned as `inspected`.
   */
  readonly inspect?: (tx: PoolClient) => Promise<R> | R;
}

/**
 * How the handler ended: the outcome the worker would have settled with, or `threw` (the worker would roll back
 * and retry), and what `inspect` returned.
 *
 * @example
 * const result: HandlerRunResult<number> = { outcome: "applied", inspected: 1 };
 */
export type HandlerRunResult<R = undefined> = (
  | { readonly outcome: "applied" | "stale" | "ignored" }
  | { readonly outcome: "threw"; readonly error: Error }
) & {
  readonly inspected: R;
  /** What the handler sent with `ctx.outbox.send`, in order: none if it threw (its writes rolled back). */
  readonly outbox: readonly TestOutboxMessage[];
};

/**
 * A message a handler sent, as {@link runHandler} reports it.
 *
 * @example
 * assert.deepEqual(result.outbox.map((m) => m.sender), ["email"]);
 */
export interface TestOutboxMessage {
  readonly sender: string;
  readonly payload: unknown;
  readonly key: string;
  readonly idempotencyKey: string;
}

/**
 * Runs one handler the way the worker does (`ctx.event`, `ctx.tx` with its transaction rules, `ctx.advance()`
 * on the real guard table, `ctx.ignore()`, `ctx.outbox`, whose messages it reports and never sends) inside a transaction that is always rolled back, so the database is
 * left as it was. The ledger needs no row for the event.
 *
 * @example
 * import { Handlers } from "hookledger";
 * import { runHandler } from "hookledger/testing";
 *
 * const handlers = new Handlers().on("stripe", "customer.subscription.updated", async (ctx) => {
 *   if (!(await ctx.advance())) return;
 *   await ctx.tx.query("insert into audit (event_id) values ($1)", [ctx.event.id]);
 * });
 * const handler = handlers.find("stripe", "customer.subscription.updated");
 * if (!handler) throw new Error("no handler");
 * const result = await runHandler(handler, {
 *   connectionString: "postgres://postgres@127.0.0.1:5432/test",
 *   event: {
 *     source: "stripe",
 *     type: "customer.subscription.updated",
 *     payload: {},
 *     entity: { type: "subscription", id: "sub_1", version: 1767225600 },
 *   },
 *   inspect: async (tx) => (await tx.query("select count(*)::int as n from audit")).rows[0].n,
 * });
 * console.log(result.outcome, result.inspected); // "applied" 1
 */
export async function runHandler<P = unknown, R = undefined>(
  handler: Handler<P>,
  options: RunHandlerOptions<P, R>,
): Promise<HandlerRunResult<R>> {
  if (!options.pool && !options.connectionString) {
    throw new TypeError("runHandler needs a database: pass `pool` or `connectionString`");
  }
  const ledger = ledgerContext(options.schema);
  const own = options.pool
    ? undefined
    : createPool({ connectionString: options.connectionString ?? "", role: "work", max: 1 });
  const pool = options.pool ?? (own as Pool);
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query("savepoint handler");
    const attempt = attemptContext(client, ledger, picked(options.event));
    const sent: TestOutboxMessage[] = [];
    const ctx = {
      ...attempt.ctx,
      outbox: {
        async send(name: string, payload: unknown, sendOptions?: SendOptions) {
          const idempotencyKey = await attempt.ctx.outbox.send(name, payload, sendOptions);
          const key = sendOptions?.key ?? `#${sent.filter((m) => m.key.startsWith("#")).length}`;
          sent.push({ sender: name, payload: JSON.parse(JSON.stringify(payload)), key, idempotencyKey });
          return idempotencyKey;
        },
      },
    };
    let error: Error | undefined;
    try {
      await (handler as Handler)(ctx);
    } catch (thrown) {
      error = thrown instanceof Error ? thrown : new Error(String(thrown));
      if (!attempt.endedTransaction()) await client.query("rollback to savepoint handler");
    } finally {
      attempt.end();
    }
    const inspected = (await options.inspect?.(client)) as R;
    const outbox = error ? [] : sent;
    return error
      ? { outcome: "threw", error, inspected, outbox }
      : { outcome: attempt.outcome(), inspected, outbox };
  } finally {
    // A connection whose rollback failed never goes back to the pool.
    const failed = await client.query("rollback").then(
      () => undefined,
      (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
    );
    client.release(failed);
    await own?.end();
  }
}

function picked<P>(event: TestEvent<P>): PickedEvent {
  const version = event.entity?.version;
  return {
    source: event.source,
    dedupe_key: event.id ?? `test_${randomUUID()}`,
    event_type: event.type,
    payload: event.payload,
    received_at: event.receivedAt ?? new Date(),
    seq: null,
    occurred_at: event.occurredAt ?? null,
    attempts: event.attempt ?? 1,
    entity_type: event.entity?.type ?? null,
    entity_id: event.entity?.id ?? null,
    entity_version:
      version === undefined ? null : version instanceof Date ? String(version.getTime()) : String(version),
    arrived_via: event.arrivedVia ?? "delivery",
  };
}
