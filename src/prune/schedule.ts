import type { Pool } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";
import { PruneRefused, runPrune } from "./run.js";
import { horizonRefusals, type PruneSource } from "./windows.js";

/**
 * Options of {@link startPruner}.
 *
 * @example
 * const options: PrunerOptions = { pool, ledger, sources: [{ name: "stripe", provider: "stripe" }],
 *   olderThanMs: 90 * 86_400_000, tombstonesOlderThanMs: 365 * 86_400_000, everyMs: 3_600_000, log };
 */
export interface PrunerOptions {
  /** An `admin` or `work` pool: a prune runs on one of its connections. */
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  /** The sources to prune (the configured ones), with their providers for the horizon check. */
  readonly sources: readonly PruneSource[];
  readonly olderThanMs: number;
  readonly tombstonesOlderThanMs: number;
  /** Time between the end of one run and the start of the next; the first runs right away. */
  readonly everyMs: number;
  /** Rows per statement. @defaultValue 200 */
  readonly batchSize?: number;
  /** The share of time its statements may take (`PruneOptions.duty`). @defaultValue 0.05 */
  readonly duty?: number;
  /** Prune even sources whose provider's replay window is longer than `olderThanMs`. */
  readonly force?: boolean;
  readonly log: Logger;
}

/**
 * How a scheduled prune runs unless told otherwise: in short bursts, a twentieth of the time, so that claims never
 * queue behind it for long (docs/benchmarks.md, "Scale": during a prune ingest p99 rose a median 1.34× flat out,
 * 1.10× at duty 0.1, and 0.90× at 0.05, within its noise).
 * `hookledger prune`, which an operator waits for, runs flat out in batches of 1000.
 *
 * @example
 * startPruner({ ...options, duty: SCHEDULED_PRUNE.duty * 2 });
 */
export const SCHEDULED_PRUNE = { batchSize: 200, duty: 0.05 } as const;

/** A running pruner. */
export interface Pruner {
  /** Stops after the current batch; resolves once no run is in progress. */
  stop(): Promise<void>;
}

/**
 * Prunes on a schedule (docs/architecture.md §8) from a service. Every instance may run one: a session advisory lock per
 * schema lets one prune at a time, and the others skip that round. Throws at once (a configuration mistake) when
 * a source's replay window is longer than the horizon and `force` is not set.
 *
 * @example
 * const pruner = startPruner({ pool, ledger, sources, olderThanMs: 90 * 86_400_000,
 *   tombstonesOlderThanMs: 365 * 86_400_000, everyMs: 3_600_000, log });
 * await pruner.stop();
 */
export function startPruner(options: PrunerOptions): Pruner {
  const refused = options.force ? [] : horizonRefusals(options.sources, options.olderThanMs);
  if (refused.length > 0) {
    throw new PruneRefused(
      `prune.olderThan is shorter than the replay window of ${refused.map((r) => r.source).join(", ")}; lengthen it, or set prune.force`,
      refused,
    );
  }
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = pruneOnce(options, stopping.signal).finally(() => {
      if (!stopping.signal.aborted) timer = setTimeout(tick, options.everyMs);
    });
  };
  tick();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}

async function pruneOnce(options: PrunerOptions, signal: AbortSignal): Promise<void> {
  const { log, ledger } = options;
  try {
    const client = await options.pool.connect();
    let locked = false;
    let broken = false;
    try {
      const lock = await client.query<{ locked: boolean }>(
        "select pg_try_advisory_lock(hashtext('hookledger.prune'), hashtext($1::text)) as locked",
        [ledger.schema],
      );
      locked = lock.rows[0]?.locked === true;
      if (!locked) {
        log.debug("prune: another instance is pruning; skipping this round");
        return;
      }
      const report = await runPrune(client, ledger, {
        sources: options.sources,
        olderThanMs: options.olderThanMs,
        tombstonesOlderThanMs: options.tombstonesOlderThanMs,
        force: true,
        signal,
        batchSize: options.batchSize ?? SCHEDULED_PRUNE.batchSize,
        duty: options.duty ?? SCHEDULED_PRUNE.duty,
      });
      if (report.pruned > 0 || report.tombstonesExpired > 0 || report.partitionsDropped.length > 0) {
        log.info(
          {
            pruned: report.pruned,
            tombstonesExpired: report.tombstonesExpired,
            partitionsDropped: report.partitionsDropped.length,
            before: report.before,
          },
          "prune: settled rows deleted, tombstones kept",
        );
      }
    } finally {
      if (locked) {
        await client
          .query("select pg_advisory_unlock(hashtext('hookledger.prune'), hashtext($1::text))", [
            ledger.schema,
          ])
          .catch(() => {
            broken = true; // a session that may still hold the lock never goes back to the pool
          });
      }
      client.release(broken);
    }
  } catch (error) {
    log.error({ err: error }, "prune: run failed; retrying at the next interval");
  }
}
