import { pg } from "../deps.js";
import { beginOn } from "../db/pooler.js";
import {
  armAttempt,
  armPrepared,
  BATCH_ENDED,
  EVENT_SAVEPOINT,
  openMarks,
  prepareArm,
} from "../ledger/arm.js";
import { type CountedKey, countAttempts } from "../ledger/pick.js";
import { lockAttempts } from "../ledger/pick-lock.js";
import { type BatchEnd, settleAttempts } from "../ledger/settle.js";
import { forgetMarks } from "../ledger/unmark.js";
import { armGate } from "./arm-gate.js";
import { type AttemptDeps, logFields, recordFailure, reportAttempt } from "./attempt.js";
import {
  type Batch,
  type Connection,
  commitFailed,
  cutOff,
  endedByHandler,
  type Entry,
  reportSettled,
} from "./batch-end.js";
import { failureText } from "./failure-text.js";
import type { CountTurns } from "./count-turns.js";
import type { DueFloorKeeper } from "./floor.js";
import { runHandler } from "./handler-run.js";
import { FROZEN_AFTER_MS } from "./heartbeat.js";

/** What one batch did: events counted, events whose turn came, and whether its time budget cut it short. */
export interface BatchRun {
  readonly counted: number;
  readonly ran: number;
  readonly budgetCut: boolean;
}

// What last_error says of a handler that returned normally but left the transaction aborted (it caught the error
// of its own failed query): the settle would fail, and without this record the event would run again and again,
// its attempts never counted.
const ABORTED =
  "the event could not settle: current transaction is aborted, commands ignored until end of transaction block";
const LEFT_FAILED = "handler left its transaction failed";

/**
 * Runs one batch of due events. Their attempts are counted first, in one statement of its own (with a back-off,
 * should the batch never record an outcome because its process died) and in the worker's turn (count-turns.ts);
 * then one transaction locks their rows and entities (pick-lock.ts) and runs each event in a savepoint of its own:
 * arm (arm.ts) → handler → guard. A handler that throws is rolled back to its savepoint and its failure recorded
 * in the same transaction, so its row lock is never released between the failure and its record, and its
 * neighbours keep their writes. One statement settles every event that ran (and gives back those that did not), one
 * commit makes it all durable. After `batchBudgetMs` no new event starts. The rarer ends (a handler cut off by its
 * timeout or by `stop()`, one that ended the transaction itself, a commit the server refuses) are in batch-end.ts.
 *
 * @example
 * const batch = await runBatch(deps, 50, dueFloorKeeper(deps.ledger), countTurns());
 * if (batch.counted === 0) await sleep(pollIntervalMs);
 */
export async function runBatch(
  deps: AttemptDeps,
  limit: number,
  floor: DueFloorKeeper,
  turns: CountTurns,
): Promise<BatchRun> {
  const client = await deps.pool.connect();
  // The pool listens for errors of idle clients only. A connection lost while checked out but between statements
  // (a handler awaiting an API call when the server restarts) would be an uncaught 'error' event that takes the
  // process down; with this listener the next statement fails instead, and the batch rolls back.
  const onError = (error: Error) => deps.log.warn({ err: error.message }, "worker connection lost mid-batch");
  client.on("error", onError);
  const conn: Connection = {
    client,
    released: false,
    release(error) {
      if (conn.released) return;
      conn.released = true;
      client.release(error);
      client.off("error", onError);
    },
  };
  try {
    const counted = await turns.take(limit, async () =>
      countAttempts(client, deps.ledger, deps.retry, limit, await floor.current(client)),
    );
    const started = performance.now();
    for (const key of counted.filter((k) => k.exhausted)) {
      deps.log.warn(
        logFields(key, started, { result: "dead" }),
        key.armed
          ? BATCH_ENDED
          : "event dead: its last attempt ended without an outcome (the worker exited, was killed or lost its connection)",
      );
      reportAttempt(deps, key, started, "dead");
    }
    // A row of marks left behind marks only events no longer stamped (unmark.ts): its failure never stops the batch.
    await forgetMarks(
      client,
      deps.ledger,
      counted.filter((k) => k.armed).map((k) => k.batch),
    ).catch((error: unknown) =>
      deps.log.warn({ err: (error as Error).message }, "could not delete a batch's row of marks"),
    );
    const keys = counted.filter((k) => !k.exhausted);
    if (keys.length === 0) return { counted: counted.length, ran: 0, budgetCut: false };
    const run = await runCounted(deps, conn, keys, started);
    return { counted: counted.length, ...run };
  } catch (error) {
    // A connection that failed mid-transaction never goes back to the pool.
    conn.release(error as Error);
    throw error;
  } finally {
    conn.release();
  }
}

// Settled with their outcome, or given back (outcome null) when their turn never came; failed ones are recorded.
function ends(batch: Batch): BatchEnd[] {
  const result: BatchEnd[] = [];
  for (const { event, ran, outcome } of batch.entries) {
    if (outcome !== undefined) result.push({ source: event.source, dedupe_key: event.dedupe_key, outcome });
    else if (!ran) result.push({ source: event.source, dedupe_key: event.dedupe_key, outcome: null });
  }
  for (const e of batch.busy) result.push({ source: e.source, dedupe_key: e.dedupe_key, outcome: null });
  return result;
}

const isDatabaseError = (error: unknown): error is Error & { code?: string } =>
  error instanceof pg().DatabaseError;
// 3B001: no such savepoint. The batch's savepoint is gone only if a handler ended the transaction (and began
// another); any other error of the batch's own statements is not taken for that.
const noSavepoint = (error: unknown) => isDatabaseError(error) && error.code === "3B001";

/**
 * Runs counted attempts in one transaction on `conn` (batch-end.ts also runs single events through it again).
 *
 * @example
 * await runCounted(deps, conn, [key], performance.now());
 */
export async function runCounted(
  deps: AttemptDeps,
  conn: Connection,
  keys: readonly CountedKey[],
  started: number,
): Promise<Omit<BatchRun, "counted">> {
  const { client } = conn;
  // Postgres ends a transaction left idle longer (a frozen worker, a host that vanished mid-handler), and its events
  // are due again; a running handler's transaction is kept busy by keepTransactionAlive (heartbeat.ts). The
  // transaction's id lets the settle tell it from one a handler began after ending it; the arms tell it by the row
  // of marks it inserts (arm.ts). Every key is of one count, so of one batch id.
  // The lock runs with a generic plan: left to choose, Postgres planned it afresh for every batch (a join into a
  // partitioned table, whose generic plan it costs with every partition): 0.71-0.84 against 0.49-0.58 ms per lock
  // of 10 keys with 9 partitions, 0.86-0.99 against 0.59-0.65 ms with 49. The handlers get the session's own
  // setting back at the first arm.
  const id = keys[0]?.batch ?? "";
  const begun = (await client.query(
    beginOn(
      client,
      `begin; set local idle_in_transaction_session_timeout = ${FROZEN_AFTER_MS};
       select pg_current_xact_id()::text as xid, ${armPrepared(deps.ledger)} as prepared,
         current_setting('plan_cache_mode') as plans;
       set local plan_cache_mode = force_generic_plan; ${openMarks(deps.ledger, id)}`,
    ),
  )) as unknown as { command: string; rows: { xid: string; prepared: boolean; plans: string }[] }[];
  const state = begun.find((result) => result.command === "SELECT")?.rows[0];
  const xid = state?.xid ?? "";
  const plans = state?.plans ?? "auto";
  if (!state?.prepared) await prepareArm(client, deps.ledger);
  const locked = await lockAttempts(client, deps.ledger, keys);
  const found = new Set(locked.map((e) => `${e.source}\u0000${e.dedupe_key}`));
  const batch: Batch = {
    id,
    started,
    // "moved": this worker stalled past the attempts' back-off and another one counted newer attempts meanwhile.
    moved: keys.filter((k) => !found.has(`${k.source}\u0000${k.dedupe_key}`)),
    // Another event of the entity started running since the count: given back, it waits its turn.
    busy: locked.filter((e) => !e.entity_free),
    entries: locked.filter((e) => e.entity_free).map((event) => ({ event, ran: false, called: false })),
  };
  const deadline = started + deps.batchBudgetMs;
  let budgetCut = false;
  let open = false;
  let last: Entry | undefined;
  // pg hands a failed query's error to the handler before the server's next ReadyForQuery says the transaction is
  // aborted, so a handler that caught its own failed query may return while the status still reads "T". The next
  // statement of the batch (an arm, the settle) then fails with 25P02, and runs again once that handler's
  // failure is recorded.
  const abortedBy = (error: unknown): Entry | undefined =>
    isDatabaseError(error) && error.code === "25P02" && last?.outcome !== undefined ? last : undefined;
  // Rolls `entry` back to its savepoint and records its failure in the batch's transaction; false when there is no
  // savepoint to roll back to (its handler ended the transaction and began another).
  const fail = async (entry: Entry, error: Error, message: string): Promise<boolean> => {
    try {
      await client.query(`rollback to savepoint ${EVENT_SAVEPOINT}`);
    } catch (rollbackError) {
      if (!noSavepoint(rollbackError)) throw rollbackError;
      return false;
    }
    delete entry.outcome;
    const text = failureText(error);
    const status = await recordFailure(deps, client, entry.event, text);
    entry.failed = { status, error, text, message };
    return true;
  };
  // An event's arm (arm.ts) goes with its handler's first query (arm-gate.ts); this one sends it alone, for a handler
  // that failed before querying, so that its failure is recorded in a savepoint of its own. False: the transaction
  // is no longer the batch's (no savepoint to release, or the arm found another transaction), so the last handler
  // ended it. Any other error fails the batch, as a lost connection would: it rolls back and its events are due again.
  const armNow = async (entry: Entry): Promise<boolean> => {
    try {
      return await armAttempt(client, deps.ledger, entry.event, open, open ? undefined : plans);
    } catch (error) {
      if (!last) throw error;
      if (noSavepoint(error)) return false;
      const aborted = abortedBy(error);
      if (!aborted) throw error;
      if (!(await fail(aborted, new Error(ABORTED), LEFT_FAILED))) return false;
      return armAttempt(client, deps.ledger, entry.event, open);
    }
  };
  for (const [i, entry] of batch.entries.entries()) {
    if (i > 0 && (deps.stopping?.() || performance.now() >= deadline)) {
      budgetCut = !deps.stopping?.();
      break;
    }
    entry.ran = true;
    const handler = deps.handlers.find(entry.event.source, entry.event.event_type);
    if (!handler) {
      entry.outcome = "unhandled";
      continue;
    }
    entry.called = true;
    // The previous event's savepoint is released by this one's arm (savepoints do not nest a batch deep); the
    // first arm of the batch gives the handlers the session's plan_cache_mode back.
    const gate = armGate(deps.ledger, entry.event, open, open ? undefined : plans);
    const result = await runHandler(deps, client, entry.event, handler, gate);
    if (!result.ok && result.cut) return cutOff(deps, conn, batch, entry, { ...result, cut: result.cut });
    const arm = await gate.settled();
    if (arm.kind === "ended" || arm.kind === "failed") {
      // Nothing of this handler lasts: its queries were skipped, refused by the aborted transaction, or ran in one
      // the batch rolls back. It is given back uncounted, or with the batch.
      entry.ran = false;
      entry.called = false;
      const aborted = arm.kind === "failed" ? abortedBy(arm.error) : undefined;
      if (arm.kind === "failed" && !aborted) throw arm.error;
      if (!last) throw new Error(`the batch's transaction ${xid} changed before any handler ran`);
      if (aborted && (await fail(aborted, new Error(ABORTED), LEFT_FAILED))) continue;
      return endedByHandler(deps, conn, batch, last);
    }
    if (arm.kind === "armed") {
      open = true;
      last = entry;
    }
    if (result.ended) return endedByHandler(deps, conn, batch, entry, result.ok ? undefined : result.error);
    // A handler that made no query cannot have aborted the transaction; should the status say so, the last armed
    // handler did, and the next statement finds it (abortedBy).
    if (result.ok && (arm.kind === "idle" || client.getTransactionStatus() !== "E")) {
      entry.outcome = result.outcome;
      continue;
    }
    const error = result.ok ? new Error(ABORTED) : result.error;
    if (arm.kind === "idle") {
      if (!(await armNow(entry))) {
        entry.ran = false;
        entry.called = false;
        if (!last) throw new Error(`the batch's transaction ${xid} changed before any handler ran`);
        return endedByHandler(deps, conn, batch, last);
      }
      open = true;
      last = entry;
    }
    // No savepoint: this handler ended the transaction and began another, then failed.
    if (!(await fail(entry, error, result.ok ? LEFT_FAILED : "handler failed"))) {
      return endedByHandler(deps, conn, batch, entry, error);
    }
  }
  let settled: boolean;
  try {
    settled = await settleAttempts(client, deps.ledger, ends(batch), xid, id);
  } catch (error) {
    const aborted = abortedBy(error);
    if (!aborted) throw error;
    if (!(await fail(aborted, new Error(ABORTED), LEFT_FAILED)))
      return endedByHandler(deps, conn, batch, aborted);
    settled = await settleAttempts(client, deps.ledger, ends(batch), xid, id);
  }
  if (!settled) {
    // Not settled: a handler ended the batch's transaction and began another; what was written there goes.
    if (!last) throw new Error(`the batch's transaction ${xid} changed before any handler ran`);
    return endedByHandler(deps, conn, batch, last);
  }
  try {
    await client.query("commit");
  } catch (error) {
    // The server refused the commit (a deferred constraint some handler's writes violate): the transaction rolled
    // back and the connection is sound.
    if (!isDatabaseError(error)) throw error;
    return commitFailed(deps, conn, batch, error, runCounted);
  }
  reportSettled(deps, batch);
  return { ran: batch.entries.filter((e) => e.ran).length, budgetCut };
}
