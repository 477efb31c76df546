import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";
import type { AlertRuleName, AlertRules } from "./types.js";

/**
 * One rule measured for one source at one evaluation.
 *
 * @example
 * const m: Measurement = { rule: "deadLetters", source: "stripe", value: 3, threshold: 1, firing: true };
 */
export interface Measurement {
  readonly rule: AlertRuleName;
  readonly source: string;
  /** In the rule's unit: a count, seconds (backlogAge), a ratio (failureRate) or a count per minute. */
  readonly value: number;
  readonly threshold: number;
  readonly firing: boolean;
}

// Each statement reads one number per source through an index made for it: events_dead (migration 013), events_due
// (whose predicate the backlog one repeats, as observability/backlog.ts does), events_settled per source (a range
// of settled_at), the delivery_stats primary key. Sources without rows are absent and read as 0.
const deadSql = statement(
  "alerts-dead",
  (s) => `select source, count(*)::float8 as value from ${s}.events
where status = 'dead' and source = any($1::text[]) group by source`,
);

const backlogSql = statement(
  "alerts-backlog",
  (s) => `select source, extract(epoch from now() - min(next_attempt_at))::float8 as value from ${s}.events
where status in ('pending', 'failed') and next_attempt_at <= now() and source = any($1::text[]) group by source`,
);

const failingSql = statement(
  "alerts-failing",
  (s) => `select src.source,
  (select count(*) from ${s}.events e
    where e.source = src.source and e.status in ('pending', 'failed') and e.status = 'failed')::float8 as failing,
  (select count(*) from ${s}.events e
    where e.source = src.source and e.status = 'settled'
      and e.settled_at >= now() - $2::bigint * interval '1 millisecond')::float8 as settled
from unnest($1::text[]) as src (source)`,
);

const unhandledSql = statement(
  "alerts-unhandled",
  (s) => `select src.source,
  (select count(*) from ${s}.events e
    where e.source = src.source and e.status = 'settled' and e.outcome = 'unhandled'
      and e.settled_at >= now() - $2::bigint * interval '1 millisecond')::float8 as value
from unnest($1::text[]) as src (source)`,
);

// delivery_stats keeps counts per minute; the window starts at the minute `hookledger stats` would start it.
const deliveryStatsSql = statement(
  "alerts-delivery-stats",
  (
    s,
  ) => `select source, coalesce(sum(refused), 0)::float8 as refused, coalesce(sum(mismatches), 0)::float8 as mismatches
from ${s}.delivery_stats
where source = any($1::text[]) and minute >= date_trunc('minute', now() - $2::bigint * interval '1 millisecond')
group by source`,
);

/**
 * Measures every configured rule for every source, one statement per rule.
 *
 * @example
 * const measurements = await measureRules(pool, ledger, { deadLetters: { atLeast: 1 } }, ["stripe", "github"]);
 */
export async function measureRules(
  db: Queryable,
  ledger: LedgerContext,
  rules: AlertRules,
  sources: readonly string[],
): Promise<Measurement[]> {
  const out: Measurement[] = [];
  const each = (rule: AlertRuleName, threshold: number, read: (source: string) => number, over: boolean) => {
    for (const source of sources) {
      const value = read(source);
      out.push({ rule, source, value, threshold, firing: over ? value > threshold : value >= threshold });
    }
  };
  const names = [...sources];
  if (rules.deadLetters) {
    const values = await bySource(db, deadSql(ledger), [names]);
    each("deadLetters", rules.deadLetters.atLeast, (s) => values.get(s)?.value ?? 0, false);
  }
  if (rules.backlogAge) {
    const values = await bySource(db, backlogSql(ledger), [names]);
    each("backlogAge", rules.backlogAge.overMs / 1000, (s) => values.get(s)?.value ?? 0, true);
  }
  if (rules.failureRate) {
    const { over, windowMs, minEvents } = rules.failureRate;
    const values = await bySource(db, failingSql(ledger), [names, Math.round(windowMs)]);
    for (const source of sources) {
      const failing = values.get(source)?.failing ?? 0;
      const total = failing + (values.get(source)?.settled ?? 0);
      const value = total === 0 ? 0 : failing / total;
      out.push({
        rule: "failureRate",
        source,
        value,
        threshold: over,
        firing: total >= minEvents && value > over,
      });
    }
  }
  if (rules.signatureFailures) {
    const { perMinute, windowMs } = rules.signatureFailures;
    const values = await bySource(db, deliveryStatsSql(ledger), [names, Math.round(windowMs)]);
    each("signatureFailures", perMinute, (s) => (values.get(s)?.refused ?? 0) / (windowMs / 60_000), false);
  }
  if (rules.bodyMismatches) {
    const { atLeast, windowMs } = rules.bodyMismatches;
    const values = await bySource(db, deliveryStatsSql(ledger), [names, Math.round(windowMs)]);
    each("bodyMismatches", atLeast, (s) => values.get(s)?.mismatches ?? 0, false);
  }
  if (rules.unhandled) {
    const values = await bySource(db, unhandledSql(ledger), [names, Math.round(rules.unhandled.windowMs)]);
    each("unhandled", rules.unhandled.atLeast, (s) => values.get(s)?.value ?? 0, false);
  }
  return out;
}

type Numbers = Record<string, number>;

async function bySource(
  db: Queryable,
  stmt: { name: string; text: string },
  values: unknown[],
): Promise<Map<string, Numbers>> {
  const { rows } = await db.query<{ source: string } & Numbers>({ ...stmt, values });
  return new Map(rows.map((r) => [r.source, r]));
}
