import type { ClientConfig } from "pg";
import type { Pool } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";
import { makeBodyPartitions } from "../ledger/body-partitions.js";
import { MAX_BATCH } from "../ledger/pick.js";
import type { AttemptReport } from "./attempt.js";
import { defaultRetryPolicy, type RetryPolicy } from "./backoff.js";
import { runBatch } from "./batch.js";
import { countTurns } from "./count-turns.js";
import { dueFloorKeeper } from "./floor.js";
import type { Handlers } from "./handlers.js";
import { listenForClaims } from "./wake.js";
import { Outbox } from "../outbox/outbox.js";
import type { OutboxSendReport } from "../outbox/deliver.js";
import { startForwardEngine, startOutboxEngine } from "./engines.js";
import type { ForwardReport } from "../forward/deliver.js";
import type { ResolvedForward } from "../forward/destination.js";
import { forwardingHandlers } from "../forward/handlers.js";
import { finishedWithin } from "../within.js";

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  /** A pool created with role `work` (its sessions carry the keepalive and idle-in-transaction settings). */
  readonly pool: Pool;
  /**
   * The same database's URL (or a pg client config), for the LISTEN connection that wakes idle slots; `null` to poll
   * only (behind a transaction pooler without a direct URL, where LISTEN does not work).
   */
  readonly connectionString: string | ClientConfig | null;
  readonly ledger: LedgerContext;
  readonly handlers: Handlers;
  readonly log: Logger;
  /**
   * Batches run at once in this process; each holds one connection while it runs. Their counts (a few milliseconds
   * per batch) take turns: docs/architecture.md, "The slots of a worker count in turn".
   * @defaultValue 4
   */
  readonly concurrency?: number;
  /**
   * The most events a batch takes: they run one after another in one transaction (each in a savepoint of its own),
   * settle in one statement and commit once. 1 to 64 (Postgres caches 64 subtransactions per transaction; past
   * that every snapshot on the server slows down). Fewer are taken after a batch ran out of `batchBudgetMs`.
   * @defaultValue 50
   */
  readonly batchSize?: number;
  /**
   * A batch starts no new event this long after its pick; the events it did not reach are given back at once,
   * uncounted, for the next batch (of any worker). It bounds how long a batch's finished events wait for their
   * commit behind slow neighbours; a single handler is still bounded only by `handlerTimeoutMs`.
   * @defaultValue 1000
   */
  readonly batchBudgetMs?: number;
  /**
   * How often an idle slot looks for due work without a notification (retries come due this way).
   * @defaultValue 1000
   */
  readonly pollIntervalMs?: number;
  /** @defaultValue {@link defaultRetryPolicy} */
  readonly retry?: Partial<RetryPolicy>;
  /**
   * A handler running longer fails its attempt (and is retried).
   * @defaultValue 30000
   */
  readonly handlerTimeoutMs?: number;
  /**
   * Hears how each attempt ended (metrics); it must not throw or block.
   * @example
   * startWorker({ ...options, onAttempt: metrics.onAttempt });
   */
  readonly onAttempt?: (report: AttemptReport) => void;
  /**
   * Makes the day partitions of event bodies for the week ahead, at start and every 6 hours (a `create table …
   * partition of`, so the role needs the right to create tables in the ledger's schema). Off for a process told
   * never to change the schema (`--no-migrate`): each `hookledger migrate` and `hookledger prune` then makes them,
   * and without them bodies land in the default partition.
   * @defaultValue true
   * @example
   * startWorker({ ...options, makePartitions: false });
   */
  readonly makePartitions?: boolean;
  /**
   * The senders of `ctx.outbox.send` and how their messages are sent (docs/outbox.md). This process sends the due
   * messages of every sender it has, whoever wrote them. @defaultValue new Outbox() (only the built-in `http`)
   * @example
   * startWorker({ ...options, outbox: new Outbox().on("email", sendEmail) });
   */
  readonly outbox?: Outbox;
  /** Hears how each outbox send ended (metrics); it must not throw or block. */
  readonly onOutboxSend?: (report: OutboxSendReport) => void;
  /**
   * The `forward` of each forwarding source, by name (docs/forwarding.md), as a configuration resolves them: this
   * process writes each of their events' forward in the event's transaction and delivers the due ones.
   */
  readonly forwards?: ReadonlyMap<string, ResolvedForward>;
  /**
   * Forward deliveries in flight at once in this process.
   * @defaultValue 32
   */
  readonly forwardConcurrency?: number;
  /** Hears how each forward attempt ended (metrics); it must not throw or block. */
  readonly onForward?: (report: ForwardReport) => void;
}

/** A running worker. */
export interface Worker {
  /**
   * Stops picking new events and waits for the running batches, which start no new event and give the rest back;
   * after `graceMs` the rest are abandoned: their handlers' later queries are refused, their transactions roll back
   * and the events are picked again by another worker. Resolves once every slot has ended (or 5 s after
   * abandoning, should one hang on a dead connection).
   */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `concurrency` slots that each pick a batch of due events at a time (FOR UPDATE SKIP LOCKED) and run it in
 * one transaction, each event in a savepoint of its own. Any number of workers, in any number of processes, share
 * one ledger safely.
 *
 * @example
 * const worker = startWorker({ pool, connectionString, ledger, handlers, log });
 * process.on("SIGTERM", () => worker.stop(10_000));
 */
export function startWorker(options: WorkerOptions): Worker {
  const retry = { ...defaultRetryPolicy, ...options.retry };
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const batchSize = options.batchSize ?? 50;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH) {
    throw new RangeError(`batchSize must be an integer from 1 to ${MAX_BATCH}, got ${batchSize}`);
  }
  const batchBudgetMs = options.batchBudgetMs ?? 1000;
  if (!(batchBudgetMs >= 0)) throw new RangeError(`batchBudgetMs must be 0 or more, got ${batchBudgetMs}`);
  if (options.connectionString === null) {
    options.log.info(
      { pollIntervalMs },
      "no LISTEN connection (behind a transaction pooler without a direct URL): the worker polls instead of listening for claims",
    );
  }
  const waker = listenForClaims({
    connectionString: options.connectionString,
    channel: options.ledger.channel,
    log: options.log,
  });
  const outbox = options.outbox ?? new Outbox();
  const forwards = options.forwards ?? new Map<string, ResolvedForward>();
  const abandon = new AbortController();
  let stopping = false;
  const deps = {
    signal: abandon.signal,
    stopping: () => stopping,
    batchBudgetMs,
    pool: options.pool,
    ledger: options.ledger,
    handlers: forwardingHandlers(options.handlers, forwards, options.ledger),
    retry,
    handlerTimeoutMs: options.handlerTimeoutMs ?? 30_000,
    log: options.log,
    ...(options.onAttempt && { onAttempt: options.onAttempt }),
    outboxSenders: outbox.senders(),
  };
  const home = {
    pool: options.pool,
    connectionString: options.connectionString,
    ledger: options.ledger,
    log: options.log,
  };
  const sending = startOutboxEngine(home, outbox, options.onOutboxSend);
  const forwarding =
    forwards.size === 0
      ? undefined
      : startForwardEngine(
          home,
          forwards,
          { concurrency: options.forwardConcurrency ?? 32, pollIntervalMs },
          options.onForward,
        );

  const floor = dueFloorKeeper(options.ledger);
  const turns = countTurns();
  const slot = async () => {
    let failures = 0;
    let limit = batchSize;
    while (!stopping) {
      try {
        // Marked before looking: a claim notified while this slot was busy finding nothing must not wait a poll.
        const mark = waker.mark();
        const batch = await runBatch(deps, limit, floor, turns);
        failures = 0;
        // A batch its time budget cut short reached `ran` events: the next takes no more than that, so a slot with
        // slow handlers does not count events only to give them back; otherwise the size grows back.
        limit = batch.budgetCut ? Math.max(1, batch.ran) : Math.min(batchSize, limit * 2);
        if (batch.counted === 0) await waker.sleep(pollIntervalMs, mark);
      } catch (error) {
        // The database is unreachable or restarting: back off (up to 5 s) and try again; nothing is lost, the
        // batch's transaction rolled back and its events are due again.
        failures++;
        options.log.error(
          { err: (error as Error).message },
          "worker slot lost its database connection; retrying",
        );
        await waker.sleep(Math.min(5000, 100 * 2 ** failures));
      }
    }
  };

  // The day partitions of event bodies for the week ahead (migration 010), made here because every deployment runs a
  // worker: without them bodies land in the default partition, where prune deletes them row by row.
  const makeAhead = () =>
    makeBodyPartitions(options.pool, options.ledger).catch((error: Error) =>
      options.log.warn({ err: error.message }, "worker could not make the partitions of the days ahead"),
    );
  const upkeep = options.makePartitions === false ? undefined : setInterval(makeAhead, 6 * 3_600_000).unref();
  if (upkeep) void makeAhead();

  const slots = Array.from({ length: options.concurrency ?? 4 }, slot);
  const all = Promise.all(slots);

  return {
    async stop(graceMs = 10_000) {
      stopping = true;
      clearInterval(upkeep);
      waker.wakeAll();
      if (!(await finishedWithin(all, graceMs))) {
        // Past the grace: cut the running handlers off. Their connections are destroyed, so their transactions
        // roll back and their events are due again for another worker, with no attempt counted.
        abandon.abort();
        const allStopped = await finishedWithin(all, 5000);
        options.log.warn(
          { graceMs, allStopped },
          "worker stopped with events still running; they rolled back and will be picked again",
        );
      }
      await waker.close();
      // After the handlers: the messages of the last batches are committed and may still be sent within the grace.
      await Promise.all([sending.stop(graceMs), forwarding?.stop(graceMs)]);
    },
  };
}
