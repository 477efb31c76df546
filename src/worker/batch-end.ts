import type { PoolClient } from "../db/pool.js";
import { type CountedKey, HANDLER_ENDED_TRANSACTION } from "../ledger/pick.js";
import { BATCH_ENDED } from "../ledger/arm.js";
import type { LockedEvent } from "../ledger/pick-lock.js";
import type { Outcome } from "../ledger/settle.js";
import { uncountAttempts } from "../ledger/uncount.js";
import { type AttemptDeps, endBackend, logFields, recordFailure, reportAttempt } from "./attempt.js";
import { failureText } from "./failure-text.js";

/** The checked-out connection a batch runs on; `release` once, with the error that makes it unfit to reuse. */
export interface Connection {
  readonly client: PoolClient;
  released: boolean;
  release(error?: Error): void;
}

/** One event of a batch and how far it got. */
export interface Entry {
  readonly event: LockedEvent;
  /** Its turn came (its handler was called, or it has none). */
  ran: boolean;
  /** Its handler was called. */
  called: boolean;
  /** The handler returned: the outcome the batch settles it with. */
  outcome?: Outcome;
  /** The handler failed: recorded in the batch's transaction. */
  failed?: { status: "failed" | "dead" | "missing"; error: Error; text: string; message: string };
}

/** A batch in its transaction. */
export interface Batch {
  /** The count's transaction id, stamped on every event of the batch: its row of marks (arm.ts). */
  readonly id: string;
  readonly started: number;
  /** Counted, but another worker counted a newer attempt before this batch locked them. */
  readonly moved: readonly CountedKey[];
  /** Locked, but another transaction holds their entity: given back. */
  readonly busy: readonly LockedEvent[];
  /** Run in this order. */
  readonly entries: Entry[];
}

type Ended = Promise<{ ran: number; budgetCut: boolean }>;
const ran = (batch: Batch) => batch.entries.filter((e) => e.ran).length;

/**
 * Logs and reports every event of a committed batch.
 *
 * @example
 * reportSettled(deps, batch);
 */
export function reportSettled(deps: AttemptDeps, batch: Batch): void {
  reportMoved(deps, batch);
  for (const entry of batch.entries) {
    const { event } = entry;
    if (entry.outcome !== undefined) {
      deps.log.info(
        logFields(event, batch.started, { result: "settled", outcome: entry.outcome }),
        "event settled",
      );
      reportAttempt(deps, event, batch.started, "settled", entry.outcome);
    } else if (entry.failed) reportFailed(deps, batch, entry, entry.failed);
  }
}

function reportFailed(
  deps: AttemptDeps,
  batch: Batch,
  entry: Entry,
  failed: NonNullable<Entry["failed"]>,
): void {
  const { status, error, text, message } = failed;
  // The same bounded text as `last_error`; never the payload.
  deps.log.warn(
    logFields(entry.event, batch.started, { result: status, err: error.message, stack: text }),
    message,
  );
  reportAttempt(deps, entry.event, batch.started, status);
}

function reportMoved(deps: AttemptDeps, batch: Batch): void {
  for (const key of batch.moved) reportAttempt(deps, key, batch.started, "missing");
}

/**
 * A handler ended the batch's transaction itself (`culprit`; `error` if it then failed): what the batch wrote after
 * that is rolled back. The culprit is dead. Those before it in the batch are dead too when the handler's commit made
 * their writes (and their arms, arm.ts) durable without their settle; when it rolled them back instead they are
 * given back uncounted, as are the events whose turn never came (never armed, untouched by that commit).
 *
 * @example
 * return endedByHandler(deps, conn, batch, entry);
 */
export async function endedByHandler(
  deps: AttemptDeps,
  conn: Connection,
  batch: Batch,
  culprit: Entry,
  error?: Error,
): Ended {
  const { client } = conn;
  // In another transaction (`commit; begin`), or an aborted one: none of it is the batch's.
  if (client.getTransactionStatus() !== "I") await client.query("rollback");
  const then = error ? `; then the handler failed: ${error.message}` : "";
  // Dead either way: its writes may have been committed, or its handler's rollback took its neighbours' with them.
  const status = await recordFailure(deps, client, culprit.event, `${HANDLER_ENDED_TRANSACTION}${then}`, {
    dead: true,
  });
  deps.log.warn(logFields(culprit.event, batch.started, { result: status }), HANDLER_ENDED_TRANSACTION);
  reportAttempt(deps, culprit.event, batch.started, "dead");
  await afterRollback(deps, client, batch, culprit, "another event of its batch ended the transaction");
  return { ran: ran(batch), budgetCut: false };
}

/**
 * A handler was cut off (`timeout`, or `abandoned` by `stop()` past its grace): its connection is destroyed, so the
 * server rolls the whole batch back. A timeout is recorded as the culprit's failed attempt on a fresh connection;
 * every other event of the batch (and an abandoned culprit) is given back uncounted: none of its writes lasted.
 *
 * @example
 * return cutOff(deps, conn, batch, entry, result);
 */
export async function cutOff(
  deps: AttemptDeps,
  conn: Connection,
  batch: Batch,
  culprit: Entry,
  result: { error: Error; cut: "timeout" | "abandoned"; ended: boolean },
): Ended {
  const { error, cut } = result;
  // The handler may still be using the connection: destroy it (the server rolls the transaction back), then record
  // on a fresh one.
  const pid = (conn.client as unknown as { processID: number | null }).processID;
  conn.release(error);
  await endBackend(deps, pid);
  if (cut === "abandoned") {
    const why = "the worker stopped while a handler of its batch ran; the batch rolled back";
    await afterRollback(deps, deps.pool, batch, undefined, why);
    return { ran: ran(batch), budgetCut: false };
  }
  const text = failureText(error, { frames: false });
  const status = await recordFailure(deps, deps.pool, culprit.event, text, { dead: result.ended });
  deps.log.warn(
    logFields(culprit.event, batch.started, { result: status, err: error.message }),
    "handler timed out",
  );
  reportAttempt(deps, culprit.event, batch.started, status === "missing" ? "dead" : status);
  await afterRollback(
    deps,
    deps.pool,
    batch,
    culprit,
    "a handler of its batch timed out; the batch rolled back",
  );
  return { ran: ran(batch), budgetCut: false };
}

/**
 * The server refused the batch's commit (a deferred constraint that some handler's writes violate): everything
 * rolled back. A batch of one records the failure, outside the transaction (fenced by the attempt number, so a
 * commit that did succeed is never shown as failed). A larger one cannot tell whose writes were refused, so each
 * event that ran runs again in a transaction of its own, within the same counted attempt: the neighbours of the
 * culprit settle at once and spend nothing, the culprit fails alone and is counted once. Recording them all as
 * failed instead would charge each an attempt and back them off, and batched together again with the culprit they
 * would fail together until all were dead.
 *
 * @example
 * return commitFailed(deps, conn, batch, error, runCounted);
 */
export async function commitFailed(
  deps: AttemptDeps,
  conn: Connection,
  batch: Batch,
  error: Error,
  rerun: (deps: AttemptDeps, conn: Connection, keys: CountedKey[], started: number) => Promise<unknown>,
): Ended {
  reportMoved(deps, batch);
  const done = batch.entries.filter((e) => e.ran);
  const notRun = [...batch.entries.filter((e) => !e.ran).map((e) => e.event), ...batch.busy];
  await uncountAttempts(conn.client, deps.ledger, notRun);
  const [only] = done;
  if (done.length === 1 && only) {
    const failure = new Error(`the event's transaction failed at commit: ${error.message}`, { cause: error });
    const text = failureText(failure, { frames: false });
    const status = await recordFailure(deps, conn.client, only.event, text);
    deps.log.warn(logFields(only.event, batch.started, { result: status, err: text }), "commit failed");
    reportAttempt(deps, only.event, batch.started, status);
    return { ran: 1, budgetCut: false };
  }
  deps.log.warn(
    { events: done.length, err: error.message },
    "a batch failed at commit; its events run again one at a time",
  );
  for (const [i, entry] of done.entries()) {
    if (conn.released || deps.stopping?.()) {
      // The connection was cut off, or the worker is stopping: the rest are given back, uncounted.
      await uncountAttempts(
        deps.pool,
        deps.ledger,
        done.slice(i).map((e) => e.event),
      );
      break;
    }
    await rerun(deps, conn, [{ ...entry.event, exhausted: false, armed: false }], performance.now());
  }
  return { ran: done.length, budgetCut: false };
}

// The batch's transaction is gone. Each event but `culprit` that still stands at its counted attempt is given back
// (its writes rolled back with the batch; an event whose turn never came was never armed, so it always is). One whose
// arm was committed (a handler committed the transaction itself) is made dead: its writes may be committed. One
// failed in the transaction and committed stays as its record says. The batch's row of marks goes.
async function afterRollback(
  deps: AttemptDeps,
  db: Parameters<typeof uncountAttempts>[0],
  batch: Batch,
  culprit: Entry | undefined,
  why: string,
): Promise<void> {
  reportMoved(deps, batch);
  const others = batch.entries.filter((e) => e !== culprit);
  const keys = [...others.map((e) => e.event), ...batch.busy];
  let back: Set<string>;
  try {
    const given = await uncountAttempts(db, deps.ledger, keys, batch.id);
    back = new Set(given.filter((k) => !k.armed).map((k) => `${k.source}\u0000${k.dedupe_key}`));
  } catch (error) {
    // Still stamped: due again after their back-off, each counted as an attempt that ended unrecorded.
    deps.log.warn({ err: (error as Error).message, events: keys.length }, "could not give a batch back");
    return;
  }
  for (const entry of others) {
    if (!entry.called) continue;
    const { event } = entry;
    if (back.has(`${event.source}\u0000${event.dedupe_key}`)) {
      deps.log.warn(logFields(event, batch.started, { result: "abandoned" }), `event given back: ${why}`);
      reportAttempt(deps, event, batch.started, "abandoned");
    } else if (entry.failed) reportFailed(deps, batch, entry, entry.failed);
    else {
      deps.log.warn(logFields(event, batch.started, { result: "dead" }), BATCH_ENDED);
      reportAttempt(deps, event, batch.started, "dead");
    }
  }
}
