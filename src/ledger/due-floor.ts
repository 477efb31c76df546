import type { PoolClient } from "../db/pool.js";
import { type LedgerContext, statement } from "./context.js";
import { leased, walkInOrder } from "./pick.js";

/**
 * How far before its own clock a floor is set when nothing older is due: a write committed after the floor was
 * taken but stamped earlier (a claim's `now()` is its transaction's start) still lands above it when its transaction
 * took less than this. The worker's own give-backs and failures are stamped with the clock of their statement, not
 * their batch's start (settle.ts, uncount.ts, fail.ts): a give-back runs just before its batch's commit.
 *
 * @example
 * await dueFloor(client, ledger, DUE_FLOOR_MARGIN_MS * 2);
 */
export const DUE_FLOOR_MARGIN_MS = 1000;

// Without a lower bound the count's walk of events_due starts at its first entry, and the entries a settle or a
// count left behind stay there (dead, but not yet to every snapshot) for as long as any transaction holds back the
// xmin horizon: two per event (the claim's and the count's, migration 001's index on next_attempt_at), none of
// which the walk can mark dead meanwhile. With a 60 s hold every 5 min on a quiet 2-core machine the count's p99
// rose 2.45× over 30 min (docs/benchmarks.md, "Scale"). This walk still pays for them, but once per refresh
// instead of once per count. The oldest due row is taken without locks or entity tries: a row another worker holds,
// or whose entity is busy, keeps the floor at or below it. A row under lease does not: events in flight keep their
// place in events_due (migration 018), and a floor held at the oldest of them would make every count walk again
// what settled since. One whose lease ends (its worker died) is below the floor until the next refresh
// (FLOOR_REFRESH_MS, worker/floor.ts) finds it at the head.
const floorSql = statement(
  "due-floor",
  (s) => `select least(
  (select next_attempt_at from ${s}.events
   where status in ('pending', 'failed') and next_attempt_at <= now() and not coalesce(${leased()}, false)
   order by next_attempt_at limit 1),
  now() - $1::float8 * interval '1 millisecond') as floor`,
);

/**
 * The lowest due time a count needs to look at (pick.ts, `countAttempts`'s `floor`): the oldest due event's, or
 * `marginMs` before now when none is older. Events made due later with an earlier stamp (a transaction that ran
 * longer than the margin) are below it: the next floor, which has no bound, finds them. Run it on a client outside a
 * transaction; like the count it walks events_due in order whatever the statistics say.
 *
 * @example
 * const floor = await dueFloor(client, ledger);
 * const counted = await countAttempts(client, ledger, policy, 50, floor);
 */
export async function dueFloor(
  db: PoolClient,
  ledger: LedgerContext,
  marginMs = DUE_FLOOR_MARGIN_MS,
): Promise<Date> {
  const rows = await walkInOrder<{ floor: Date }>(db, { ...floorSql(ledger), values: [marginMs] });
  const floor = rows[0]?.floor;
  if (!(floor instanceof Date)) throw new Error("the due floor query returned no time");
  return floor;
}
