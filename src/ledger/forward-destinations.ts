import { type LedgerContext, type Queryable, statement } from "./context.js";
import { FORWARD_SENDER, forwardChannel } from "./forward-write.js";

/**
 * The state of one forwarding source's destination: disabled (by a 410, until re-enabled), paused by the breaker,
 * and its queue.
 *
 * @example
 * const [stripe]: readonly DestinationState[] = await listForwardDestinations(pool, ledger, ["stripe"]);
 */
export interface DestinationState {
  readonly source: string;
  readonly disabledAt: Date | null;
  readonly disabledReason: string | null;
  /** Consecutive failed attempts. */
  readonly failures: number;
  /** Set while the breaker holds the destination's deliveries. */
  readonly pausedUntil: Date | null;
  readonly pending: number;
  readonly dead: number;
  readonly sent: number;
}

const listSql = statement(
  "forward-destinations",
  (s) => `select n.source, d.disabled_at, d.disabled_reason, coalesce(d.failures, 0)::int as failures,
  case when d.paused_until > now() then d.paused_until end as paused_until,
  (select count(*) from ${s}.outbox o where o.source = n.source and o.sender = '${FORWARD_SENDER}' and o.status = 'pending')::int as pending,
  (select count(*) from ${s}.outbox o where o.source = n.source and o.sender = '${FORWARD_SENDER}' and o.status = 'dead')::int as dead,
  (select count(*) from ${s}.outbox o where o.source = n.source and o.sender = '${FORWARD_SENDER}' and o.status = 'sent')::int as sent
from unnest(coalesce($1::text[], array(
  select source from ${s}.forward_destinations
  union select distinct source from ${s}.outbox where sender = '${FORWARD_SENDER}'
))) as n(source)
left join ${s}.forward_destinations d on d.source = n.source
order by n.source`,
);

interface Row {
  source: string;
  disabled_at: Date | null;
  disabled_reason: string | null;
  failures: number;
  paused_until: Date | null;
  pending: number;
  dead: number;
  sent: number;
}

/**
 * The destinations of the given forwarding sources (by default every source that has forwarded or failed to), in
 * name order.
 *
 * @example
 * for (const d of await listForwardDestinations(pool, ledger, ["stripe"])) console.log(d.source, d.disabledAt ? "disabled" : "on");
 */
export async function listForwardDestinations(
  db: Queryable,
  ledger: LedgerContext,
  sources?: readonly string[],
): Promise<DestinationState[]> {
  const { rows } = await db.query<Row>({ ...listSql(ledger), values: [sources ? [...sources] : null] });
  return rows.map((r) => ({
    source: r.source,
    disabledAt: r.disabled_at,
    disabledReason: r.disabled_reason,
    failures: r.failures,
    pausedUntil: r.paused_until,
    pending: r.pending,
    dead: r.dead,
    sent: r.sent,
  }));
}

// Re-enabling also closes the breaker: the operator says the destination is back. Its waiting messages are due now.
const enableSql = statement(
  "forward-enable",
  (s) => `with enabled as (
  update ${s}.forward_destinations set disabled_at = null, disabled_reason = null, failures = 0, paused_until = null
  where source = $1::text and (disabled_at is not null or paused_until is not null or failures > 0)
  returning source
), due as (
  update ${s}.outbox set next_attempt_at = now()
  where source = $1::text and sender = '${FORWARD_SENDER}' and status = 'pending' and exists (select 1 from enabled)
)
select (select count(*) from enabled)::int as n, pg_notify($2::text, '')`,
);

/**
 * Re-enables a destination disabled by a 410 (or paused by the breaker); returns false when it was neither.
 *
 * @example
 * await enableForwardDestination(pool, ledger, "stripe");
 */
export async function enableForwardDestination(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>({
    ...enableSql(ledger),
    values: [source, forwardChannel(ledger)],
  });
  return (rows[0]?.n ?? 0) > 0;
}

/**
 * One attempt of a forwarded event, as recorded.
 *
 * @example
 * const [first]: readonly ForwardAttempt[] = await listForwardAttempts(pool, ledger, "stripe", "evt_1");
 */
export interface ForwardAttempt {
  readonly attempt: number;
  readonly at: Date;
  readonly status: number | null;
  readonly ms: number;
  readonly error: string | null;
  readonly snippet: string | null;
}

const attemptsSql = statement(
  "forward-attempts",
  (s) => `select attempt, at, status, ms, error, snippet from ${s}.forward_attempts
where source = $1::text and dedupe_key = $2::text order by id limit $3::int`,
);

/**
 * The recorded attempts of one forwarded event, oldest first (at most `limit`).
 *
 * @example
 * const attempts = await listForwardAttempts(pool, ledger, "stripe", "evt_1");
 */
export async function listForwardAttempts(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  dedupeKey: string,
  limit = 100,
): Promise<ForwardAttempt[]> {
  const { rows } = await db.query<ForwardAttempt>({
    ...attemptsSql(ledger),
    values: [source, dedupeKey, limit],
  });
  return rows;
}
