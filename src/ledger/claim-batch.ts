import type { Logger } from "../log.js";
import { type ClaimInput, type ClaimResult, claimEvent, inClaimSession } from "./claim.js";
import { countDuplicateBatch } from "./claim-batch-duplicates.js";
import { type BatchRow, batchRow, insertClaimBatch } from "./claim-batch-insert.js";
import type { LedgerContext, Queryable } from "./context.js";
import type { NotifyThrottle } from "./notify.js";

/**
 * Options of {@link claimBatcher}.
 *
 * @example
 * const options: ClaimBatcherOptions = { db: ingestPool, ledger, log, wakeups, maxWaitMs: 1800 };
 */
export interface ClaimBatcherOptions {
  /** Where claims run: the ingest pool, or an app's own `pg` pool (each statement then in its own transaction). */
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly log: Logger;
  /** Which batches carry the workers' NOTIFY. @defaultValue every batch that inserted something */
  readonly wakeups?: NotifyThrottle;
  /** Most deliveries in one statement. @defaultValue 500 */
  readonly maxRows?: number;
  /** Most batches in flight at once; never more than the pool's `max`. @defaultValue 4 */
  readonly maxBatches?: number;
  /**
   * A claim still queued after this long is given up before it is sent (the edge has answered it 503 by then).
   * @defaultValue Infinity
   */
  readonly maxWaitMs?: number;
}

/**
 * Claims deliveries in batches: same answers as `claimEvent`, fewer statements and commits.
 *
 * @example
 * const batcher: ClaimBatcher = claimBatcher({ db: ingestPool, ledger, log });
 */
export interface ClaimBatcher {
  /**
   * Claims one delivery (already storable); resolves once the statement holding its row committed. `bodySha256`
   * is the body's sha256 in hex when the caller took it already (the edge does, for its cache), so it is not taken
   * twice.
   */
  claim(input: Omit<ClaimInput, "notify">, bodySha256?: string): Promise<ClaimResult>;
}

interface Pending {
  readonly input: Omit<ClaimInput, "notify">;
  readonly bodySha256: string | undefined;
  readonly queuedAt: number;
  resolve(result: ClaimResult): void;
  reject(error: unknown): void;
}

interface Prepared {
  readonly pending: Pending;
  readonly row: BatchRow;
}

// SQLSTATEs that one row can cause (data exception, integrity constraint, program limit such as an index row too
// large, a prune racing one key: HLP01) or that a single claim cannot meet (a deadlock, possible only between
// batches crossing on GitHub body hashes: docs/architecture.md, "Concurrent claims are committed in batches"): the
// batch's rows are then claimed one by one, so only the row at fault gets its error.
const ROW_LEVEL = /^(?:22|23|54)[0-9A-Z]{3}$|^(?:HLP01|40P01)$/;

/**
 * Group commit of concurrent claims (docs/architecture.md, "Concurrent claims are committed in batches"). A claim
 * waits in a queue only while `maxBatches` batches are in flight: the queue leaves as one batch (up to `maxRows`)
 * as soon as one finishes, and a lone claim leaves at once (in the same event-loop turn), so batching adds no timer
 * and no latency at low load. Each batch is one multi-row `insert … on conflict do nothing returning` with the
 * NOTIFY, then, for the deliveries it did not insert, one duplicate lookup that counts them. Every claim is
 * answered only after the statement holding its row committed; a repeated key in a batch is sent once and its other
 * deliveries are answered as duplicates by the lookup. A statement refused for a row's data (`ROW_LEVEL`) is
 * retried row by row with `claimEvent`, so one bad row fails alone; a lost connection or a timeout fails every
 * claim of the batch. A key held by another open claim makes the whole batch wait for that claim's commit.
 *
 * @example
 * const batcher = claimBatcher({ db: ingestPool, ledger, log, wakeups: notifyThrottle(ingestPool, ledger, log) });
 * const { status, id } = await batcher.claim({ source: "stripe", event, body, headers: {}, secretIndex: 0, arrivedVia: "delivery" });
 */
export function claimBatcher(options: ClaimBatcherOptions): ClaimBatcher {
  const maxRows = options.maxRows ?? 500;
  const poolMax = (options.db as { options?: { max?: unknown } }).options?.max;
  const maxBatches = Math.max(
    1,
    Math.min(options.maxBatches ?? 4, typeof poolMax === "number" ? poolMax : Number.POSITIVE_INFINITY),
  );
  const maxWaitMs = options.maxWaitMs ?? Number.POSITIVE_INFINITY;
  const queue: Pending[] = [];
  let inFlight = 0;
  let scheduled = false;

  // Claims given up after maxWaitMs are never sent: the provider retries them, and sending them would only load a
  // database that is already too slow.
  const expired = (p: Pending, now: number) => {
    if (now - p.queuedAt < maxWaitMs) return false;
    p.reject(
      new Error(`claim of ${p.input.source}/${p.input.event.dedupeKey} given up after ${maxWaitMs} ms`),
    );
    return true;
  };

  const drain = () => {
    scheduled = false;
    while (inFlight < maxBatches && queue.length > 0) {
      const now = performance.now();
      const batch = queue.splice(0, maxRows).filter((p) => !expired(p, now));
      if (batch.length === 0) continue;
      inFlight++;
      void runBatch(batch).finally(() => {
        inFlight--;
        drain();
      });
    }
  };

  const runBatch = async (batch: Pending[]): Promise<void> => {
    try {
      await claimBatch(batch);
    } catch (error) {
      // claimBatch settles every claim itself; this only guards against a bug leaving some unanswered.
      options.log.error({ err: (error as Error).message }, "claim batch failed unexpectedly");
      for (const p of batch) p.reject(error);
    }
  };

  const claimBatch = async (batch: Pending[]): Promise<void> => {
    const { db, ledger, log } = options;
    const sent: Prepared[] = [];
    const repeated: Prepared[] = [];
    const keys = new Set<string>();
    for (const pending of batch) {
      let row: BatchRow;
      try {
        row = batchRow(pending.input, pending.bodySha256);
      } catch (error) {
        pending.reject(error);
        continue;
      }
      const key = `${pending.input.source}\0${pending.input.event.dedupeKey}`;
      (keys.has(key) ? repeated : sent).push({ pending, row });
      keys.add(key);
    }
    if (sent.length === 0) return;
    const notify = options.wakeups?.claimNotifies() ?? true;
    let accepted: Set<string>;
    try {
      accepted = await inClaimSession(db, (session) =>
        insertClaimBatch(
          session,
          ledger,
          sent.map((p) => p.row),
          notify ? ledger.channel : undefined,
        ),
      );
    } catch (error) {
      return refused(error, [...sent, ...repeated], "claim");
    }
    if (!notify && accepted.size > 0) options.wakeups?.committedQuietly();
    const conflicted = repeated;
    for (const p of sent) {
      const key = `${p.row.input.source}\0${p.row.input.event.dedupeKey}`;
      if (accepted.has(key)) p.pending.resolve({ status: "accepted", id: p.row.input.event.dedupeKey });
      else conflicted.push(p);
    }
    if (conflicted.length === 0) return;
    let found: Awaited<ReturnType<typeof countDuplicateBatch>>;
    try {
      found = await inClaimSession(db, (session) =>
        countDuplicateBatch(
          session,
          ledger,
          conflicted.map((p) => p.row),
        ),
      );
    } catch (error) {
      return refused(error, conflicted, "duplicate lookup");
    }
    // No live row: a pruned event's tombstone, or a row pruned meanwhile; the single claim answers both.
    const rest: Prepared[] = [];
    conflicted.forEach((p, i) => {
      const duplicate = found[i];
      if (duplicate) p.pending.resolve(duplicate);
      else rest.push(p);
    });
    if (rest.length > 0) log.debug({ rows: rest.length }, "claim batch: no live row for some keys");
    await oneByOne(rest);
  };

  const refused = async (error: unknown, claims: Prepared[], step: string): Promise<void> => {
    const code = (error as { code?: unknown }).code;
    const err = (error as Error).message;
    if (typeof code !== "string" || !ROW_LEVEL.test(code)) {
      for (const p of claims) p.pending.reject(error);
      return;
    }
    options.log.warn(
      { code, err, rows: claims.length, eventIds: claims.map((p) => p.row.input.event.dedupeKey) },
      `claim batch ${step} refused; claiming its rows one by one`,
    );
    await oneByOne(claims);
  };

  // Sequential: the batch keeps to its one connection, and a claim whose deadline passed meanwhile is not sent.
  const oneByOne = async (claims: Prepared[]): Promise<void> => {
    for (const { pending } of claims) {
      if (expired(pending, performance.now())) continue;
      try {
        const notify = options.wakeups === undefined;
        const result = await claimEvent(options.db, options.ledger, { ...pending.input, notify });
        if (result.status === "accepted" && !notify) options.wakeups?.committedQuietly();
        pending.resolve(result);
      } catch (error) {
        pending.reject(error);
      }
    }
  };

  return {
    claim(input, bodySha256) {
      return new Promise<ClaimResult>((resolve, reject) => {
        queue.push({ input, bodySha256, queuedAt: performance.now(), resolve, reject });
        // setImmediate, not a timer: the claims that arrive in this turn of the event loop leave together.
        if (!scheduled && inFlight < maxBatches) {
          scheduled = true;
          setImmediate(drain);
        }
      });
    },
  };
}
