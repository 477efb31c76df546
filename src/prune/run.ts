import { setTimeout as sleep } from "node:timers/promises";
import { dropBodyPartitions, makeBodyPartitions, oldBodiesEnd } from "../ledger/body-partitions.js";
import type { LedgerContext, Queryable } from "../ledger/context.js";
import { countPrunable, expireTombstones, pruneBatch } from "../ledger/prune.js";
import { horizonRefusals, type HorizonRefusal, type PruneSource } from "./windows.js";

/**
 * What to prune (docs/architecture.md §8).
 *
 * @example
 * const options: PruneOptions = { sources: [{ name: "stripe", provider: "stripe" }], olderThanMs: 90 * 86_400_000,
 *   tombstonesOlderThanMs: 365 * 86_400_000 };
 */
export interface PruneOptions {
  readonly sources: readonly PruneSource[];
  /** Settled rows settled longer ago than this go. */
  readonly olderThanMs: number;
  /** Tombstones of events received longer ago than this go; must exceed `olderThanMs`. */
  readonly tombstonesOlderThanMs: number;
  /** Rows per statement. @defaultValue 1000 */
  readonly batchSize?: number;
  /**
   * The share of wall time the prune's statements may take, from above 0 to 1: after a batch that took `t` ms it
   * waits `t × (1 − duty) ÷ duty` ms, leaving Postgres to the claims and the worker between its batches (README.md,
   * "Prune"). `1` runs the batches back to back.
   * @defaultValue 1
   * @example runPrune(pool, ledger, { ...options, duty: 0.25 }) // a quarter of the time, four times as long
   */
  readonly duty?: number;
  /** Count only; delete nothing. */
  readonly dryRun?: boolean;
  /** Prune even sources whose provider's replay window is longer than `olderThanMs`. */
  readonly force?: boolean;
  /** Called after each batch with the running totals. */
  readonly onProgress?: (progress: { source: string; pruned: number; expired: number }) => void;
  /** Stops between batches. */
  readonly signal?: AbortSignal;
  /** The clock. @defaultValue Date.now */
  readonly now?: () => number;
}

/**
 * What a prune did, or with `dryRun` would do.
 *
 * @example
 * const report: PruneReport = { dryRun: false, sources: [{ source: "stripe", pruned: 2500 }], tombstonesExpired: 0, … };
 */
export interface PruneReport {
  readonly dryRun: boolean;
  readonly before: string;
  readonly tombstonesBefore: string;
  readonly sources: readonly { readonly source: string; readonly pruned: number }[];
  readonly pruned: number;
  readonly tombstonesExpired: number;
  /** The day partitions of event bodies dropped whole (none with `dryRun`). */
  readonly partitionsDropped: readonly string[];
}

/**
 * Refused: a horizon shorter than a source's replay window, or a tombstone horizon not longer than the prune
 * horizon.
 */
export class PruneRefused extends Error {
  constructor(
    message: string,
    readonly refusals: readonly HorizonRefusal[] = [],
  ) {
    super(message);
    this.name = "PruneRefused";
  }
}

/**
 * Prunes each source's settled rows older than the horizon, batch by batch, keeping a tombstone of each key; drops
 * the day partitions of event bodies past the horizon (and makes those of the days ahead); then expires the
 * tombstones past the second horizon. Throws {@link PruneRefused} before touching anything when a
 * source's provider can still replay events older than the horizon (unless `force`).
 *
 * @example
 * const report = await runPrune(pool, ledger, { sources, olderThanMs: 90 * 86_400_000, tombstonesOlderThanMs: 365 * 86_400_000 });
 */
export async function runPrune(
  db: Queryable,
  ledger: LedgerContext,
  options: PruneOptions,
): Promise<PruneReport> {
  if (options.tombstonesOlderThanMs <= options.olderThanMs) {
    throw new PruneRefused(
      "the tombstone horizon must be longer than the prune horizon, or a pruned key would be forgotten at once",
    );
  }
  const refusals = options.force ? [] : horizonRefusals(options.sources, options.olderThanMs);
  if (refusals.length > 0) {
    const days = (ms: number) => `${Math.round(ms / 86_400_000)} days`;
    const list = refusals
      .map((r) => `${r.source} (${r.provider ?? "unknown provider"}: replay window ${days(r.windowMs)})`)
      .join(", ");
    throw new PruneRefused(
      `horizon of ${days(options.olderThanMs)} is shorter than the replay window of ${list}; prune older rows only, or pass --force`,
      refusals,
    );
  }
  const now = (options.now ?? Date.now)();
  const before = new Date(now - options.olderThanMs);
  const tombstonesBefore = new Date(now - options.tombstonesOlderThanMs);
  const limit = options.batchSize ?? 1000;
  const rest = pacer(options.duty ?? 1, options.signal);
  const oldEnd = options.dryRun ? null : await oldBodiesEnd(db, ledger);
  const sources: { source: string; pruned: number }[] = [];
  let total = 0;
  for (const { name } of options.sources) {
    let pruned = 0;
    if (options.dryRun) pruned = await countPrunable(db, ledger, name, before);
    else {
      while (!options.signal?.aborted) {
        const started = performance.now();
        const batch = await pruneBatch(db, ledger, { source: name, before, limit, oldBodiesEnd: oldEnd });
        if (batch.marked === 0) break;
        await rest(performance.now() - started);
        pruned += batch.pruned;
        options.onProgress?.({ source: name, pruned: total + pruned, expired: 0 });
      }
    }
    sources.push({ source: name, pruned });
    total += pruned;
  }
  let partitionsDropped: readonly string[] = [];
  if (!options.dryRun && !options.signal?.aborted) {
    partitionsDropped = (await dropBodyPartitions(db, ledger, before)).dropped;
    await makeBodyPartitions(db, ledger);
  }
  const names = options.sources.map((s) => s.name);
  let expired = 0;
  if (options.dryRun) {
    expired = await expireTombstones(db, ledger, {
      before: tombstonesBefore,
      limit,
      sources: names,
      dryRun: true,
    });
  } else {
    while (!options.signal?.aborted) {
      const started = performance.now();
      const n = await expireTombstones(db, ledger, { before: tombstonesBefore, limit, sources: names });
      if (n === 0) break;
      await rest(performance.now() - started);
      expired += n;
      options.onProgress?.({ source: "tombstones", pruned: total, expired });
    }
  }
  return {
    dryRun: options.dryRun ?? false,
    before: before.toISOString(),
    tombstonesBefore: tombstonesBefore.toISOString(),
    sources,
    pruned: total,
    tombstonesExpired: expired,
    partitionsDropped,
  };
}

// Waits out the rest of a batch's share of time; an abort ends the wait at once (the loop then stops).
function pacer(duty: number, signal: AbortSignal | undefined): (batchMs: number) => Promise<void> {
  if (!(duty > 0 && duty <= 1)) throw new RangeError(`duty must be above 0 and at most 1, got ${duty}`);
  return async (batchMs) => {
    const ms = (batchMs * (1 - duty)) / duty;
    if (ms < 1) return;
    await sleep(ms, undefined, signal ? { signal } : undefined).catch(() => {});
  };
}
