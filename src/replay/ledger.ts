import { claimEvent } from "../ledger/claim.js";
import type { LedgerContext, Queryable } from "../ledger/context.js";
import type { ParsedEvent } from "../providers/types.js";
import type { Progress } from "./progress.js";
import type { ReplayReport } from "./report.js";

/** The ledger a replay reads and writes. */
export interface ReplayLedger {
  readonly db: Queryable;
  readonly ledger: LedgerContext;
}

/** One fetched event, ready to claim: what the provider's parser made of it and the bytes the row keeps. */
export interface ReplayItem {
  readonly event: ParsedEvent;
  readonly body: Uint8Array;
}

/**
 * The dedupe keys of `source` that are already in the ledger (or were, and were pruned), out of `keys`.
 *
 * @example
 * const present = await keysInLedger(target, "stripe", ["evt_1", "evt_2"]); // Set { "evt_1" }
 */
export async function keysInLedger(
  target: ReplayLedger,
  source: string,
  keys: readonly string[],
): Promise<Set<string>> {
  const present = new Set<string>();
  for (let i = 0; i < keys.length; i += 5000) {
    const { rows } = await target.db.query<{ dedupe_key: string }>(
      // A pruned event's tombstone counts as present: replaying it would be a duplicate (docs/architecture.md §8).
      `select dedupe_key from ${target.ledger.s}.events
        where source = $1::text and dedupe_key = any($2::text[])
       union
       select dedupe_key from ${target.ledger.s}.tombstones
        where source = $1::text and dedupe_key = any($2::text[])`,
      [source, keys.slice(i, i + 5000)],
    );
    for (const row of rows) present.add(row.dedupe_key);
  }
  return present;
}

/**
 * Claims each item in order (oldest first) with `arrivedVia: "replay"` and counts it in the report: accepted →
 * `new`, duplicate (a live delivery won the race) → `duplicate`, error → `failed`. The body is the API's rendering
 * of the event, not the original delivery's bytes.
 *
 * @example
 * await claimReplayed(target, "stripe", missing, report, bar);
 */
export async function claimReplayed(
  target: ReplayLedger,
  source: string,
  items: readonly ReplayItem[],
  report: ReplayReport,
  progress: Progress,
): Promise<void> {
  for (const [i, item] of items.entries()) {
    try {
      const result = await claimEvent(target.db, target.ledger, {
        source,
        event: item.event,
        body: item.body,
        headers: {},
        secretIndex: null,
        arrivedVia: "replay",
      });
      if (result.status === "accepted") {
        report.new++;
        report.newIds.push(result.id);
      } else {
        report.duplicate++;
      }
    } catch (error) {
      report.failed++;
      report.failures.push({ id: item.event.dedupeKey, error: (error as Error).message });
    }
    progress.update(i + 1, items.length);
  }
  progress.finish();
}
