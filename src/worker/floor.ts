import type { PoolClient } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import { dueFloor } from "../ledger/due-floor.js";

/**
 * How often a worker takes a new floor. An event made due below the current floor (its transaction ran longer than
 * the floor's margin) waits at most this long for the next one. Each refresh walks events_due from its first
 * entry, as every count did before floors: the cost a held xmin horizon adds is paid this often, not per count.
 */
export const FLOOR_REFRESH_MS = 5000;

/**
 * The due floor one worker's slots share (due-floor.ts): taken on the first count, then again by the first slot
 * to count after {@link FLOOR_REFRESH_MS}; the other slots keep counting from the last one meanwhile.
 *
 * @example
 * const floor = dueFloorKeeper(ledger);
 * const counted = await countAttempts(client, ledger, policy, 50, await floor.current(client));
 */
export interface DueFloorKeeper {
  /** The floor to count from; `undefined` (count from the first entry) while the first one is being taken. */
  current(client: PoolClient): Promise<Date | undefined>;
}

/**
 * Makes a {@link DueFloorKeeper} for one worker.
 *
 * @example
 * const floor = dueFloorKeeper(ledger);
 */
export function dueFloorKeeper(ledger: LedgerContext): DueFloorKeeper {
  let floor: Date | undefined;
  let takenAt = Number.NEGATIVE_INFINITY;
  let taking = false;
  return {
    async current(client) {
      if (taking || performance.now() - takenAt < FLOOR_REFRESH_MS) return floor;
      taking = true;
      try {
        const started = performance.now();
        floor = await dueFloor(client, ledger);
        takenAt = started;
      } finally {
        taking = false;
      }
      return floor;
    },
  };
}
