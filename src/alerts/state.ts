import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";
import type { Measurement } from "./measure.js";
import type { AlertKind } from "./types.js";

// A transition is one statement: the state row's change and its messages commit together. The row lock serialises
// evaluators of one instance: the second one re-reads the row it waited for (READ COMMITTED re-checks the ON CONFLICT
// WHERE and the UPDATE's WHERE against the committed row), finds it already firing (or clear), and queues nothing.
// `evaluated_at` keeps the newest evaluation: an older one that commits late (a slow evaluator) changes nothing.
// `since = $5` in RETURNING is true only on a transition, which sets it to this evaluation's time.
const queue = (s: string, kind: AlertKind) => `
insert into ${s}.alert_messages (source, rule, episode, kind, destination, data)
select t.source, t.rule, t.episode, '${kind}', d.name, jsonb_build_object('rule', t.rule, 'source', t.source,
  'value', $3::float8, 'threshold', $4::float8, 'episode', t.episode,
  'since', to_char(t.since at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
from t cross join unnest($6::text[]) as d (name)
where t.changed
on conflict do nothing`;

const fireSql = statement(
  "alerts-fire",
  (s) => `with t as (
  insert into ${s}.alerts as a (source, rule, firing, episode, value, threshold, since, evaluated_at)
  values ($1::text, $2::text, true, 1, $3::float8, $4::float8, $5::timestamptz, $5::timestamptz)
  on conflict (source, rule) do update set
    firing = true,
    episode = a.episode + case when a.firing then 0 else 1 end,
    since = case when a.firing then a.since else excluded.since end,
    value = excluded.value, threshold = excluded.threshold, evaluated_at = excluded.evaluated_at
  where a.evaluated_at < excluded.evaluated_at
  returning a.source, a.rule, a.episode, a.since, a.since = $5::timestamptz as changed
)${queue(s, "firing")}`,
);

const clearSql = statement(
  "alerts-clear",
  (s) => `with t as (
  update ${s}.alerts a set
    firing = false,
    since = case when a.firing then $5::timestamptz else a.since end,
    value = $3::float8, threshold = $4::float8, evaluated_at = $5::timestamptz
  where a.source = $1::text and a.rule = $2::text and a.evaluated_at < $5::timestamptz
  returning a.source, a.rule, a.episode, a.since, a.since = $5::timestamptz as changed
)${queue(s, "resolved")}`,
);

/**
 * Records one measurement taken at `evaluatedAt` (the database's clock) in the instance's state row. When the
 * instance changes between clear and firing, queues one message per destination in the same statement.
 *
 * @returns how many messages this call queued (0 when nothing changed, or another evaluator made the change).
 * @example
 * const queued = await recordMeasurement(pool, ledger, measurement, evaluatedAt, ["slack", "webhooks[0]"]);
 */
export async function recordMeasurement(
  db: Queryable,
  ledger: LedgerContext,
  m: Measurement,
  evaluatedAt: Date,
  destinations: readonly string[],
): Promise<number> {
  const result = await db.query({
    ...(m.firing ? fireSql(ledger) : clearSql(ledger)),
    values: [m.source, m.rule, m.value, m.threshold, evaluatedAt, [...destinations]],
  });
  return result.rowCount ?? 0;
}
