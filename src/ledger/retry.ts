import { withTransaction } from "../db/pool.js";
import type { PoolClient } from "../db/pool.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { EventStatus } from "./inspect.js";
import type { Outcome } from "./settle.js";

/** An event by its ledger key. */
export interface EventKey {
  readonly source: string;
  readonly dedupeKey: string;
}

/**
 * What `retryEvents` did with one event:
 * - `retried`: it is pending and due now (`previous` says what it was);
 * - `missing`: the ledger has no such event;
 * - `settled`: refused, it settled already (pass `force` to run it again);
 * - `pending`: nothing to do, it is due already;
 * - `inline`: refused, an app's own route is running it (the inline guard's lease);
 * - `busy`: a worker is running it right now; ask again once that attempt ends.
 *
 * @example
 * const line = result.result === "retried" ? `${result.previous} → pending` : result.result;
 */
export type RetryResult = EventKey &
  (
    | { readonly result: "retried"; readonly previous: EventStatus; readonly attempts: number }
    | { readonly result: "settled"; readonly outcome: Outcome | null }
    | { readonly result: "missing" | "pending" | "inline" | "busy" }
  );

// SKIP LOCKED: a row a worker holds is mid-attempt; waiting for it could take the whole handler timeout, and the
// attempt's own record (settled, failed) is what the operator needs to see first.
const retrySql = statement(
  "events-retry",
  (s) => `with target as (
  select e.source, e.dedupe_key, e.status
  from ${s}.events e
  join unnest($1::text[], $2::text[]) as t(source, dedupe_key)
    on e.source = t.source and e.dedupe_key = t.dedupe_key
  where e.status in ('failed', 'dead') or ($3::boolean and e.status = 'settled')
  for update of e skip locked
)
update ${s}.events e
set status = 'pending', outcome = null, settled_at = null, next_attempt_at = now()
from target t
where e.source = t.source and e.dedupe_key = t.dedupe_key
returning e.source, e.dedupe_key, t.status as previous, e.attempts`,
);

const statusSql = statement(
  "events-retry-status",
  (s) => `select e.source, e.dedupe_key, e.status, e.outcome
from ${s}.events e
join unnest($1::text[], $2::text[]) as t(source, dedupe_key)
  on e.source = t.source and e.dedupe_key = t.dedupe_key`,
);

const notifySql = statement("events-notify", () => "select pg_notify($1::text, '')");

/**
 * NOTIFYs the ledger's channel, so idle workers look for due events now instead of at their next poll; inside a
 * transaction it is delivered at the commit.
 *
 * @example
 * await wakeWorkers(pool, ledger);
 */
export async function wakeWorkers(db: Queryable, ledger: LedgerContext): Promise<void> {
  await db.query({ ...notifySql(ledger), values: [ledger.channel] });
}

/**
 * Makes failed and dead events (and, with `force`, settled ones) pending and due now, in one transaction that
 * also NOTIFYs the ledger's channel so idle workers wake at its commit.
 *
 * Only `status`, `next_attempt_at` and, for a settled event, `outcome` and `settled_at` change: `attempts` and
 * `last_error` stay as the history of what happened, and `arrived_via` still says how the event first arrived.
 * Because attempts keep counting, a dead event gets one attempt now; if that one fails too, it is dead again
 * (no second round of backoff), with the new error.
 *
 * Running a settled event again is refused without `force`: the version guard keeps entities from going
 * backwards (the second run usually settles `stale`), but a handler's other effects, an email or an API call,
 * happen again unless the handler is idempotent.
 *
 * @returns one result per key, in the order given.
 * @example
 * const results = await retryEvents(pool, ledger, [{ source: "stripe", dedupeKey: "evt_1" }]);
 */
export async function retryEvents(
  pool: { connect(): Promise<PoolClient> },
  ledger: LedgerContext,
  keys: readonly EventKey[],
  options: { force?: boolean } = {},
): Promise<RetryResult[]> {
  const sources = keys.map((k) => k.source);
  const dedupeKeys = keys.map((k) => k.dedupeKey);
  return withTransaction(pool, async (tx) => {
    const retried = await tx.query<{
      source: string;
      dedupe_key: string;
      previous: EventStatus;
      attempts: number;
    }>({ ...retrySql(ledger), values: [sources, dedupeKeys, options.force === true] });
    const current = await tx.query<{
      source: string;
      dedupe_key: string;
      status: EventStatus;
      outcome: Outcome | null;
    }>({ ...statusSql(ledger), values: [sources, dedupeKeys] });
    if (retried.rows.length > 0) await wakeWorkers(tx, ledger);
    const id = (source: string, dedupeKey: string) => JSON.stringify([source, dedupeKey]);
    const done = new Map(retried.rows.map((r) => [id(r.source, r.dedupe_key), r]));
    const seen = new Map(current.rows.map((r) => [id(r.source, r.dedupe_key), r]));
    return keys.map((key): RetryResult => {
      const k = id(key.source, key.dedupeKey);
      const hit = done.get(k);
      if (hit) return { ...key, result: "retried", previous: hit.previous, attempts: hit.attempts };
      const row = seen.get(k);
      if (!row) return { ...key, result: "missing" };
      if (row.status === "settled") return { ...key, result: "settled", outcome: row.outcome };
      if (row.status === "pending" || row.status === "inline") return { ...key, result: row.status };
      return { ...key, result: "busy" };
    });
  });
}
