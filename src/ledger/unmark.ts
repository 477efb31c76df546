import { type LedgerContext, type Queryable, statement } from "./context.js";

// A row of marks (arm.ts) matters while an event it marks is still stamped with its batch: the count makes such an
// event dead when it meets it. Once none is left the row goes. Read in a statement of its own, after the count that
// made the events dead committed: two counts making events of one batch dead at once each see only their own, but
// the one that commits last runs this after both commits and sees no marked event left.
const forgetSql = statement(
  "unmark",
  (s) => `delete from ${s}.batch_marks m
where m.batch = any($1::bigint[])
  and not exists (
    select 1 from ${s}.events e
    where e.attempt_batch = m.batch and e.attempt_started_at is not null and e.status in ('pending', 'failed')
      and m.armed & (1::bigint << (e.attempt_slot - 1)) <> 0
  )`,
);

/**
 * Deletes the rows of marks of `batches` that mark no event still stamped with their batch (call it after the
 * count that made their events dead committed). It walks the backlog, so it runs only when a count met a committed
 * mark: after a handler committed its batch's transaction itself and its worker died.
 *
 * @returns how many rows went.
 * @example
 * await forgetMarks(pool, ledger, counted.filter((k) => k.armed).map((k) => k.batch));
 */
export async function forgetMarks(
  db: Queryable,
  ledger: LedgerContext,
  batches: readonly string[],
): Promise<number> {
  if (batches.length === 0) return 0;
  const result = await db.query({ ...forgetSql(ledger), values: [[...new Set(batches)]] });
  return result.rowCount ?? 0;
}
