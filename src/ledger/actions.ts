import { type LedgerContext, type Queryable, statement } from "./context.js";

/**
 * One thing a dashboard user did to the ledger, as recorded (migration 012's `dashboard_actions`).
 *
 * @example
 * const action: RecordedAction = { id: "1", at: new Date(), actor: "alice", action: "retry",
 *   events: [{ source: "stripe", dedupeKey: "evt_1" }], result: { retried: 1 } };
 */
export interface RecordedAction {
  readonly id: string;
  readonly at: Date;
  /** The name of the dashboard user (the token's name) who did it. */
  readonly actor: string;
  readonly action: string;
  /** What it was applied to: the events' keys, or the filter of a bulk requeue. */
  readonly events: unknown;
  /** What came of it (counts per result). */
  readonly result: unknown;
}

const recordSql = statement(
  "dashboard-action-record",
  (s) => `insert into ${s}.dashboard_actions (actor, action, events, result)
values ($1::text, $2::text, $3::jsonb, $4::jsonb)
returning id::text as id, at`,
);

const listSql = statement(
  "dashboard-action-list",
  (s) => `select id::text as id, at, actor, action, events, result from ${s}.dashboard_actions
order by id desc
limit $1::int`,
);

/**
 * Appends an action to the record.
 *
 * @example
 * await recordAction(pool, ledger, { actor: "alice", action: "retry", events: keys, result: { retried: 2 } });
 */
export async function recordAction(
  db: Queryable,
  ledger: LedgerContext,
  action: Omit<RecordedAction, "id" | "at">,
): Promise<RecordedAction> {
  const { rows } = await db.query<{ id: string; at: Date }>({
    ...recordSql(ledger),
    values: [action.actor, action.action, JSON.stringify(action.events), JSON.stringify(action.result)],
  });
  const row = rows[0] as { id: string; at: Date };
  return { ...action, id: row.id, at: row.at };
}

/**
 * The latest recorded actions, newest first.
 *
 * @example
 * const recent = await listActions(pool, ledger, 20);
 */
export async function listActions(
  db: Queryable,
  ledger: LedgerContext,
  limit = 50,
): Promise<RecordedAction[]> {
  const { rows } = await db.query<RecordedAction>({ ...listSql(ledger), values: [limit] });
  return rows;
}
