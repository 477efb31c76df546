import type { Pool, PoolClient } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import { advanceVersion } from "../ledger/advance.js";
import { failEvent } from "../ledger/fail.js";
import { type PickedEvent, pickEvent } from "../ledger/pick.js";
import { type Outcome, settleEvent } from "../ledger/settle.js";
import type { Logger } from "../log.js";
import { type RetryPolicy, retryDelay } from "./backoff.js";
import type { HandlerContext, HandlerEvent, Handlers } from "./handlers.js";

/** What one attempt needs. */
export interface AttemptDeps {
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  readonly handlers: Handlers;
  readonly retry: RetryPolicy;
  readonly handlerTimeoutMs: number;
  readonly log: Logger;
}

/** Thrown into a handler's later queries once its attempt is over (it timed out and kept going). */
class AttemptOverError extends Error {}

/**
 * Runs one due event, if any, in one transaction: pick (row lock) → handler → guard → settle, committed together.
 * A handler that throws is rolled back to a savepoint and the failure is recorded in the same transaction, so the
 * row lock is never released between the failure and its record.
 *
 * @returns false when nothing was due.
 */
export async function attemptNext(deps: AttemptDeps): Promise<boolean> {
  const client = await deps.pool.connect();
  let released = false;
  const release = (error?: Error) => {
    if (released) return;
    released = true;
    client.release(error);
  };
  try {
    await client.query("begin");
    const picked = await pickEvent(client, deps.ledger);
    if (!picked) {
      await client.query("commit");
      return false;
    }
    const started = performance.now();
    const result = await runHandler(deps, client, picked);
    if (result.ok) {
      await settleEvent(client, deps.ledger, picked.source, picked.dedupe_key, result.outcome);
      await client.query("commit");
      deps.log.info(
        logFields(picked, started, { result: "settled", outcome: result.outcome }),
        "event settled",
      );
      return true;
    }
    if (result.timedOut) {
      // The handler may still be using the connection: destroy it (the server rolls the transaction back) and
      // record the failure on a fresh one.
      release(result.error);
      const status = await recordFailure(deps, deps.pool, picked, result.error);
      deps.log.warn(
        logFields(picked, started, { result: status, err: result.error.message }),
        "handler timed out",
      );
      return true;
    }
    await client.query("rollback to savepoint handler");
    const status = await recordFailure(deps, client, picked, result.error);
    await client.query("commit");
    deps.log.warn(
      logFields(picked, started, { result: status, err: result.error.message }),
      "handler failed",
    );
    return true;
  } catch (error) {
    // A connection that failed mid-transaction never goes back to the pool.
    release(error as Error);
    throw error;
  } finally {
    release();
  }
}

class TimeoutError extends Error {}

type HandlerResult = { ok: true; outcome: Outcome } | { ok: false; error: Error; timedOut: boolean };

async function runHandler(
  deps: AttemptDeps,
  client: PoolClient,
  picked: PickedEvent,
): Promise<HandlerResult> {
  const handler = deps.handlers.find(picked.source, picked.event_type);
  if (!handler) return { ok: true, outcome: "unhandled" };
  await client.query("savepoint handler");
  let over = false;
  let stale = false;
  let ignored = false;
  const event = toHandlerEvent(picked);
  const tx = new Proxy(client, {
    get(target, property, receiver) {
      if (property === "release") {
        return () => {
          throw new Error("hookledger owns this transaction: do not release it");
        };
      }
      if (property === "query") {
        return (...args: unknown[]) => {
          if (over)
            throw new AttemptOverError(`the attempt for ${picked.source}/${picked.dedupe_key} is over`);
          return (target.query as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  const ctx: HandlerContext = {
    event,
    tx,
    async advance(entityType, entityId, version) {
      const type = entityType ?? event.entity?.type;
      const id = entityId ?? event.entity?.id;
      const v = version ?? event.entity?.version;
      if (type === undefined || id === undefined || v === undefined) {
        throw new Error(`advance() needs an entity: ${picked.source}/${picked.event_type} reports none`);
      }
      const advanced = await advanceVersion(tx, deps.ledger, {
        entityType: type,
        entityId: id,
        version: v instanceof Date ? v.getTime() : v,
        source: picked.source,
        dedupeKey: picked.dedupe_key,
      });
      if (!advanced) stale = true;
      return advanced;
    },
    ignore() {
      ignored = true;
    },
  };
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TimeoutError(`handler exceeded ${deps.handlerTimeoutMs} ms`)),
      deps.handlerTimeoutMs,
    );
  });
  try {
    const run = Promise.resolve().then(() => handler(ctx));
    // After a timeout the handler's own rejection has no one left to hear it; keep it from being "unhandled".
    run.catch(() => {});
    await Promise.race([run, timeout]);
    return { ok: true, outcome: stale ? "stale" : ignored ? "ignored" : "applied" };
  } catch (error) {
    const err = error instanceof Error ? error : new Error(String(error));
    return { ok: false, error: err, timedOut: err instanceof TimeoutError };
  } finally {
    over = true;
    clearTimeout(timer);
  }
}

async function recordFailure(
  deps: AttemptDeps,
  db: Pool | PoolClient,
  picked: PickedEvent,
  error: Error,
): Promise<string> {
  const attempt = picked.attempts + 1;
  const status = await failEvent(db, deps.ledger, {
    source: picked.source,
    dedupeKey: picked.dedupe_key,
    error: error.message.slice(0, 2000),
    maxAttempts: deps.retry.maxAttempts,
    retryInMs: retryDelay(deps.retry, attempt),
  });
  return status ?? "missing";
}

function toHandlerEvent(picked: PickedEvent): HandlerEvent {
  return {
    id: picked.dedupe_key,
    source: picked.source,
    type: picked.event_type,
    payload: picked.payload,
    receivedAt: picked.received_at,
    occurredAt: picked.occurred_at,
    attempt: picked.attempts + 1,
    entity:
      picked.entity_type !== null && picked.entity_id !== null && picked.entity_version !== null
        ? { type: picked.entity_type, id: picked.entity_id, version: picked.entity_version }
        : null,
    arrivedVia: picked.arrived_via,
  };
}

function logFields(picked: PickedEvent, started: number, extra: Record<string, unknown>) {
  return {
    source: picked.source,
    eventId: picked.dedupe_key,
    type: picked.event_type,
    attempt: picked.attempts + 1,
    durationMs: Math.round(performance.now() - started),
    ...extra,
  };
}
