import type { Pool, PoolClient } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import { failEvent } from "../ledger/fail.js";
import type { PickedEvent } from "../ledger/pick.js";
import type { Outcome } from "../ledger/settle.js";
import type { Logger } from "../log.js";
import { type RetryPolicy, retryDelay } from "./backoff.js";
import type { Handlers } from "./handlers.js";

/** What a batch of attempts needs. */
export interface AttemptDeps {
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  readonly handlers: Handlers;
  readonly retry: RetryPolicy;
  readonly handlerTimeoutMs: number;
  /** A batch starts no new event this long after its pick; the rest are given back uncounted. */
  readonly batchBudgetMs: number;
  readonly log: Logger;
  /** True once the worker stops picking: a batch starts no new event and gives the rest back. */
  readonly stopping?: () => boolean;
  /** Aborted when the worker gives up on its running events (`stop()` past its grace): they roll back, unrecorded. */
  readonly signal?: AbortSignal;
  /** Hears how each attempt ended (metrics); it must not throw or block. */
  readonly onAttempt?: (report: AttemptReport) => void;
  /** The names `ctx.outbox.send` accepts; another name is written dead, saying which exist. */
  readonly outboxSenders: readonly string[];
}

/**
 * How one attempt ended: `settled` (with its outcome), `failed` (due again later), `dead` (attempts exhausted, or a
 * handler ended the transaction), `abandoned` (its handler ran but its batch rolled back: the worker stopped, or
 * another event of the batch was cut off or ended the transaction; due again, not counted) or `missing` (the row
 * moved on meanwhile).
 *
 * @example
 * startWorker({ ...options, onAttempt: (r) => r.result === "dead" && alert(`${r.source} ${r.type} is dead`) });
 */
export interface AttemptReport {
  readonly source: string;
  readonly type: string;
  readonly result: "settled" | "failed" | "dead" | "abandoned" | "missing";
  readonly outcome?: Outcome;
  /** From the pick of the event's batch to the end of the attempt (the commit that recorded its outcome). */
  readonly seconds: number;
}

/**
 * Tells `onAttempt` how one attempt ended; a listener that throws is logged, never propagated.
 *
 * @example
 * reportAttempt(deps, picked, started, "settled", "applied");
 */
export function reportAttempt(
  deps: AttemptDeps,
  picked: Pick<PickedEvent, "source" | "event_type" | "dedupe_key">,
  started: number,
  result: AttemptReport["result"],
  outcome?: Outcome,
): void {
  try {
    deps.onAttempt?.({
      source: picked.source,
      type: picked.event_type,
      result,
      ...(outcome !== undefined && { outcome }),
      seconds: (performance.now() - started) / 1000,
    });
  } catch (error) {
    deps.log.warn({ eventId: picked.dedupe_key, err: (error as Error).message }, "onAttempt threw");
  }
}

/**
 * Records a failed attempt (fenced by its attempt number, so a late record never overwrites a settle or a newer
 * attempt): due again after the retry policy's back-off, or dead once attempts are spent (or at once with `dead`).
 *
 * @returns the event's new status, `missing` when it had moved on.
 * @example
 * const status = await recordFailure(deps, client, picked, failureText(error));
 */
export async function recordFailure(
  deps: AttemptDeps,
  db: Pool | PoolClient,
  picked: Pick<PickedEvent, "source" | "dedupe_key" | "attempts">,
  text: string,
  options: { dead?: boolean } = {},
): Promise<"failed" | "dead" | "missing"> {
  const status = await failEvent(db, deps.ledger, {
    source: picked.source,
    dedupeKey: picked.dedupe_key,
    error: text,
    maxAttempts: deps.retry.maxAttempts,
    retryInMs: retryDelay(deps.retry, picked.attempts),
    attempts: picked.attempts,
    dead: options.dead ?? false,
  });
  return status ?? "missing";
}

/**
 * The fields every log line about an attempt carries (never the payload).
 *
 * @example
 * deps.log.info(logFields(picked, started, { result: "settled" }), "event settled");
 */
export function logFields(
  picked: Pick<PickedEvent, "source" | "dedupe_key" | "event_type" | "attempts">,
  started: number,
  extra: Record<string, unknown>,
) {
  return {
    source: picked.source,
    eventId: picked.dedupe_key,
    type: picked.event_type,
    attempt: picked.attempts,
    durationMs: Math.round(performance.now() - started),
    ...extra,
  };
}

/**
 * Ends the backend of a destroyed connection if it is still busy. Destroying the socket is enough for a backend
 * that waits for its client (idle in transaction); one still running the handler's statement (a lock wait, a slow
 * query) notices only when that statement ends, holding the batch's row locks until then, and the records that
 * follow would wait for it.
 *
 * @example
 * await endBackend(deps, pid);
 */
export async function endBackend(deps: AttemptDeps, pid: number | null): Promise<void> {
  if (!pid) return;
  try {
    await deps.pool.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
       where pid = $1::int and state <> 'idle' and application_name = current_setting('application_name')`,
      [pid],
    );
  } catch (error) {
    deps.log.warn({ err: (error as Error).message, pid }, "could not end the backend of a cut-off attempt");
  }
}
