import { type LedgerContext, type Queryable, statement } from "../ledger/context.js";
import type { AlertData, AlertKind } from "./types.js";

/**
 * A queued message taken for sending, its attempt counted.
 *
 * @example
 * const [message]: readonly OutgoingAlert[] = await takeDueAlerts(pool, ledger, { destinations: ["slack"], sources: ["stripe"], limit: 20, leaseMs: 60_000 });
 */
export interface OutgoingAlert {
  readonly source: string;
  readonly rule: string;
  readonly episode: number;
  readonly kind: AlertKind;
  readonly destination: string;
  readonly data: AlertData;
  /** This attempt's number, 1 for the first. */
  readonly attempts: number;
  readonly createdAt: Date;
}

// Taking a message moves next_attempt_at past the send's timeout: the lease. Another instance skips it meanwhile,
// and takes it again only if this one died before recording the result (then the receiver may get it twice, with
// the same webhook-id). A resolved message waits for its episode's firing message to the same destination, so a
// receiver never sees an episode end before it began.
const takeSql = statement(
  "alerts-take",
  (s) => `update ${s}.alert_messages m
set attempts = m.attempts + 1, next_attempt_at = now() + $3::bigint * interval '1 millisecond'
from (
  select q.source, q.rule, q.episode, q.kind, q.destination from ${s}.alert_messages q
  where q.sent_at is null and q.next_attempt_at <= now() and q.destination = any($1::text[])
    and q.source = any($4::text[])
    and not (q.kind = 'resolved' and exists (
      select 1 from ${s}.alert_messages f
      where f.source = q.source and f.rule = q.rule and f.episode = q.episode and f.kind = 'firing'
        and f.destination = q.destination and f.sent_at is null and f.next_attempt_at < 'infinity'))
  order by q.next_attempt_at
  limit $2::int
  for update skip locked
) p
where m.source = p.source and m.rule = p.rule and m.episode = p.episode and m.kind = p.kind
  and m.destination = p.destination
returning m.source, m.rule, m.episode, m.kind, m.destination, m.data, m.attempts, m.created_at`,
);

const sentSql = statement(
  "alerts-sent",
  (s) => `update ${s}.alert_messages set sent_at = now(), last_error = null
where source = $1::text and rule = $2::text and episode = $3::bigint and kind = $4::text
  and destination = $5::text and attempts = $6::int and sent_at is null`,
);

// `retryInMs` null: the last attempt; the message stays, unsent, with its error, and is never taken again.
const failedSql = statement(
  "alerts-failed",
  (s) => `update ${s}.alert_messages set last_error = $7::text,
  next_attempt_at = coalesce(now() + $8::bigint * interval '1 millisecond', 'infinity')
where source = $1::text and rule = $2::text and episode = $3::bigint and kind = $4::text
  and destination = $5::text and attempts = $6::int and sent_at is null`,
);

interface Row {
  source: string;
  rule: string;
  episode: string;
  kind: AlertKind;
  destination: string;
  data: AlertData;
  attempts: number;
  created_at: Date;
}

/**
 * Takes up to `limit` due messages of the given sources for the given destinations, counting an attempt of each
 * and leasing them for `leaseMs`; concurrent callers take different messages.
 *
 * @example
 * const due = await takeDueAlerts(pool, ledger, { destinations: ["slack"], sources: ["stripe"], limit: 20, leaseMs: 60_000 });
 */
export async function takeDueAlerts(
  db: Queryable,
  ledger: LedgerContext,
  options: { destinations: readonly string[]; sources: readonly string[]; limit: number; leaseMs: number },
): Promise<OutgoingAlert[]> {
  const { rows } = await db.query<Row>({
    ...takeSql(ledger),
    values: [[...options.destinations], options.limit, Math.round(options.leaseMs), [...options.sources]],
  });
  return rows.map((r) => ({
    source: r.source,
    rule: r.rule,
    episode: Number(r.episode),
    kind: r.kind,
    destination: r.destination,
    data: r.data,
    attempts: r.attempts,
    createdAt: r.created_at,
  }));
}

/**
 * Records the result of a message's attempt: sent, or failed with `error` and due again after `retryInMs`
 * (`null`: never again). Only the attempt that took the message records it.
 *
 * @example
 * await recordAlertAttempt(pool, ledger, message, { sent: false, error: "HTTP 500", retryInMs: 4000 });
 */
export async function recordAlertAttempt(
  db: Queryable,
  ledger: LedgerContext,
  m: OutgoingAlert,
  result: { sent: true } | { sent: false; error: string; retryInMs: number | null },
): Promise<void> {
  const key = [m.source, m.rule, m.episode, m.kind, m.destination, m.attempts];
  if (result.sent) await db.query({ ...sentSql(ledger), values: key });
  else
    await db.query({
      ...failedSql(ledger),
      values: [...key, result.error, result.retryInMs === null ? null : Math.round(result.retryInMs)],
    });
}

// Sent messages, and those given up on, stay a month for whoever looks at the table, then go: alerts are rare, so
// an hourly sweep of the small table is enough.
const pruneSql = statement(
  "alerts-prune",
  (s) => `delete from ${s}.alert_messages
where (sent_at is not null or next_attempt_at = 'infinity') and created_at < now() - $1::bigint * interval '1 millisecond'`,
);

/**
 * Deletes messages sent (or given up on) more than `olderThanMs` ago; returns how many went.
 *
 * @example
 * await pruneAlertMessages(pool, ledger, 30 * 86_400_000);
 */
export async function pruneAlertMessages(
  db: Queryable,
  ledger: LedgerContext,
  olderThanMs: number,
): Promise<number> {
  const result = await db.query({ ...pruneSql(ledger), values: [Math.round(olderThanMs)] });
  return result.rowCount ?? 0;
}
