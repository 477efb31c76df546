import { pg } from "../deps.js";
import type { Pool, PoolClient } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import { failEvent } from "../ledger/fail.js";
import {
  countAttempt,
  HANDLER_ENDED_TRANSACTION,
  lockAttempt,
  type PickedEvent,
  uncountAttempt,
} from "../ledger/pick.js";
import { type Outcome, settleEvent } from "../ledger/settle.js";
import type { Logger } from "../log.js";
import { type RetryPolicy, retryDelay } from "./backoff.js";
import { failureText } from "./failure-text.js";
import { FROZEN_AFTER_MS } from "./heartbeat.js";
import type { Handlers } from "./handlers.js";
import { runHandler } from "./handler-run.js";

/** What one attempt needs. */
export interface AttemptDeps {
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  readonly handlers: Handlers;
  readonly retry: RetryPolicy;
  readonly handlerTimeoutMs: number;
  readonly log: Logger;
  /** Aborted when the worker gives up on its running events (`stop()` past its grace): they roll back, unrecorded. */
  readonly signal?: AbortSignal;
  /** Hears how each attempt ended (metrics); it must not throw or block. */
  readonly onAttempt?: (report: AttemptReport) => void;
}

/**
 * How one attempt ended: `settled` (with its outcome), `failed` (due again later), `dead` (attempts exhausted),
 * `abandoned` (the worker stopped first; due again, not counted) or `missing` (the row moved on meanwhile).
 *
 * @example
 * startWorker({ ...options, onAttempt: (r) => r.result === "dead" && alert(`${r.source} ${r.type} is dead`) });
 */
export interface AttemptReport {
  readonly source: string;
  readonly type: string;
  readonly result: "settled" | "failed" | "dead" | "abandoned" | "missing";
  readonly outcome?: Outcome;
  /** From the pick to the end of the attempt. */
  readonly seconds: number;
}

/**
 * Runs one due event, if any. Its attempt is counted first, in a statement of its own (with a back-off, should the
 * attempt never record an outcome because its process died); then, in one transaction: lock the row → handler →
 * guard → settle, committed together. A handler that throws is rolled back to a savepoint and the failure is
 * recorded in the same transaction, so the row lock is never released between the failure and its record. A
 * transaction that fails at COMMIT is recorded as a failed attempt afterwards. A handler that times out, or is
 * abandoned when the worker stops, loses its connection (the transaction rolls back); a timeout is then recorded as
 * a failure, an abandoned attempt is given back uncounted.
 *
 * @returns false when nothing was due.
 */
export async function attemptNext(deps: AttemptDeps): Promise<boolean> {
  const client = await deps.pool.connect();
  // The pool listens for errors of idle clients only. A connection lost while checked out but between statements
  // (a handler awaiting an API call when the server restarts) would be an uncaught 'error' event that takes the
  // process down; with this listener the next statement fails instead, and the attempt rolls back.
  const onError = (error: Error) =>
    deps.log.warn({ err: error.message }, "worker connection lost mid-attempt");
  client.on("error", onError);
  let released = false;
  const release = (error?: Error) => {
    if (released) return;
    released = true;
    client.release(error);
    client.off("error", onError);
  };
  try {
    const counted = await countAttempt(client, deps.ledger, deps.retry);
    if (!counted) return false;
    const picked = counted.event;
    const started = performance.now();
    if (counted.kind === "exhausted") {
      deps.log.warn(
        logFields(picked, started, { result: "dead" }),
        "event dead: its last attempt ended without an outcome (the worker exited, was killed or lost its connection)",
      );
      reportAttempt(deps, picked, started, "dead");
      return true;
    }
    // Postgres ends a transaction left idle longer (a frozen worker, a host that vanished mid-handler), and the
    // event is due again; a running handler's transaction is kept busy by keepTransactionAlive (heartbeat.ts).
    await client.query(`begin; set local idle_in_transaction_session_timeout = ${FROZEN_AFTER_MS}`);
    const lock = await lockAttempt(client, deps.ledger, picked);
    if (lock !== "locked") {
      await client.query("rollback");
      // "moved": this worker stalled past the attempt's back-off and another one counted a newer attempt meanwhile.
      if (lock === "moved") reportAttempt(deps, picked, started, "missing");
      // "entity-busy": an event of the same entity started running since the count; this one waits its turn.
      else await uncountAttempt(client, deps.ledger, picked);
      return true;
    }
    const result = await runHandler(deps, client, picked);
    let ended = result.ended;
    if (result.ok && !ended) {
      try {
        ended = !(await settleEvent(
          client,
          deps.ledger,
          picked.source,
          picked.dedupe_key,
          result.outcome,
          result.xid,
        ));
      } catch (error) {
        // A handler that caught the error of its own failed query returns normally, but the transaction is aborted
        // and the settle fails. Without this the event would be picked again and again, its attempts never counted.
        if (!result.savepoint || !(error instanceof pg().DatabaseError)) throw error;
        const failure = new Error(`the event could not settle: ${error.message}`, { cause: error });
        await failInTransaction(
          deps,
          client,
          picked,
          started,
          failure,
          "handler left its transaction failed",
        );
        return true;
      }
      // Not settled: the handler ended the attempt's transaction and began another; what it wrote there goes.
      if (ended) await client.query("rollback");
    }
    if (ended && !(!result.ok && result.cut)) {
      // The row lock went with the transaction: the event must not run again (see armAttempt).
      const then = result.ok ? "" : `; then the handler failed: ${result.error.message}`;
      const status = await recordFailure(deps, client, picked, `${HANDLER_ENDED_TRANSACTION}${then}`, true);
      deps.log.warn(logFields(picked, started, { result: status }), HANDLER_ENDED_TRANSACTION);
      reportAttempt(deps, picked, started, "dead");
      return true;
    }
    if (result.ok) {
      try {
        await client.query("commit");
      } catch (error) {
        // The server refused the commit (a deferred constraint the handler's writes violate): the transaction
        // rolled back and the connection is sound. Record the failure outside it; its fence leaves a settled row.
        if (!(error instanceof pg().DatabaseError)) throw error;
        const failure = new Error(`the event's transaction failed at commit: ${error.message}`, {
          cause: error,
        });
        const text = failureText(failure, { frames: false });
        const status = await recordFailure(deps, client, picked, text);
        deps.log.warn(logFields(picked, started, { result: status, err: text }), "commit failed");
        reportAttempt(deps, picked, started, status);
        return true;
      }
      deps.log.info(
        logFields(picked, started, { result: "settled", outcome: result.outcome }),
        "event settled",
      );
      reportAttempt(deps, picked, started, "settled", result.outcome);
      return true;
    }
    if (result.cut) {
      // The handler may still be using the connection: destroy it (the server rolls the transaction back), then
      // record a timeout on a fresh one. An abandoned event is not a failure: it is simply due again, uncounted.
      const pid = (client as unknown as { processID: number | null }).processID;
      release(result.error);
      await endBackend(deps, pid);
      if (result.cut === "abandoned") {
        await uncountAttempt(deps.pool, deps.ledger, picked).catch((error: Error) =>
          deps.log.warn(
            { eventId: picked.dedupe_key, err: error.message },
            "could not give the attempt back",
          ),
        );
        deps.log.warn(
          logFields(picked, started, { result: "abandoned" }),
          "worker stopped while the handler ran; the event rolled back and will be picked again",
        );
        reportAttempt(deps, picked, started, "abandoned");
        return true;
      }
      const text = failureText(result.error, { frames: false });
      const status = await recordFailure(deps, deps.pool, picked, text, result.ended);
      deps.log.warn(
        logFields(picked, started, { result: status, err: result.error.message }),
        "handler timed out",
      );
      reportAttempt(deps, picked, started, status);
      return true;
    }
    await failInTransaction(deps, client, picked, started, result.error, "handler failed");
    return true;
  } catch (error) {
    // A connection that failed mid-transaction never goes back to the pool.
    release(error as Error);
    throw error;
  } finally {
    release();
  }
}

async function failInTransaction(
  deps: AttemptDeps,
  client: PoolClient,
  picked: PickedEvent,
  started: number,
  error: Error,
  message: string,
): Promise<void> {
  await client.query("rollback to savepoint handler");
  const text = failureText(error);
  const status = await recordFailure(deps, client, picked, text);
  await client.query("commit");
  // The same bounded text as `last_error`; never the payload.
  deps.log.warn(logFields(picked, started, { result: status, err: error.message, stack: text }), message);
  reportAttempt(deps, picked, started, status);
}

function reportAttempt(
  deps: AttemptDeps,
  picked: PickedEvent,
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

// Destroying the socket is enough for a backend that waits for its client (idle in transaction). A backend still
// busy with the handler's statement (a lock wait, a slow query) notices only when that statement ends, holding the
// event's row lock until then, and the recording of the failure would wait for it: terminate it.
async function endBackend(deps: AttemptDeps, pid: number | null): Promise<void> {
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

async function recordFailure(
  deps: AttemptDeps,
  db: Pool | PoolClient,
  picked: PickedEvent,
  text: string,
  dead = false,
): Promise<"failed" | "dead" | "missing"> {
  const status = await failEvent(db, deps.ledger, {
    source: picked.source,
    dedupeKey: picked.dedupe_key,
    error: text,
    maxAttempts: deps.retry.maxAttempts,
    retryInMs: retryDelay(deps.retry, picked.attempts),
    attempts: picked.attempts,
    dead,
  });
  return status ?? "missing";
}

function logFields(picked: PickedEvent, started: number, extra: Record<string, unknown>) {
  return {
    source: picked.source,
    eventId: picked.dedupe_key,
    type: picked.event_type,
    attempt: picked.attempts,
    durationMs: Math.round(performance.now() - started),
    ...extra,
  };
}
