import { type LedgerContext, type Queryable, statement } from "./context.js";
import { FORWARD_SENDER } from "./forward-write.js";
import { WAIT_DEFER_MS, wakeWaiting } from "./forward-wake.js";
import { fence } from "./outbox-take.js";

/**
 * A forwarded event taken for delivery: its attempt counted and committed, leased until the call's timeout has
 * passed.
 *
 * @example
 * const [taken]: readonly TakenForward[] = await takeForwards(pool, ledger, { sources: ["stripe"], limit: 16, leaseMs: 20_000 });
 */
export interface TakenForward {
  readonly source: string;
  readonly dedupeKey: string;
  readonly messageKey: string;
  readonly idempotencyKey: string;
  readonly provider: string;
  readonly type: string;
  /** The provider's bytes, exactly as received. */
  readonly body: Buffer;
  /** This attempt's number, 1 for the first: the fence of its end. */
  readonly attempts: number;
  /** A newer version of its entity was delivered already: it is not to be sent. */
  readonly stale: boolean;
}

// Looked at per take: the `limit` wanted and this many more, so that a take's work is bounded whatever the backlog.
const LOOK_AHEAD = 100;

// As the outbox's take (outbox-take.ts), and besides: a destination disabled (410) or paused (the breaker) has its
// messages left alone, so they spend no attempts; and an ordered message is taken only when it heads its entity's
// pending ones, ranked tried first (one in flight or failing keeps its place), then by (version, write order): one
// entity's deliveries go one at a time in version order while the other entities' go on. It also waits while an
// event of its entity received before it is still to be processed (pending or failed: its forward is not written
// yet), so events that arrived in order are delivered in order whatever order the worker ran them in. Waiting is
// not an attempt. A taken ordered message whose entity already had a newer version delivered is `stale`: recorded,
// not sent. A message found waiting is deferred, so the next takes look past it (forward-wake.ts).
const takeSql = statement(
  "forward-take",
  (s) => `with look as (
  select q.source, q.dedupe_key, q.message_key, q.next_attempt_at,
    q.ordering_key is null or (not exists (
      select 1 from ${s}.outbox e
      where e.source = q.source and e.ordering_key = q.ordering_key and e.ordering_key is not null
        and e.status = 'pending'
        and (e.attempts = 0, e.ordering_version, e.seq) < (q.attempts = 0, q.ordering_version, q.seq)
    ) and not exists (
      select 1 from ${s}.events ev
      where ev.entity_type = q.ordering_key::jsonb ->> 0 and ev.entity_id = q.ordering_key::jsonb ->> 1
        and ev.entity_id is not null and ev.received_at < q.event_received_at
        and ev.source = q.source and ev.status in ('pending', 'failed')
    )) as free
  from ${s}.outbox q
  where q.status = 'pending' and q.next_attempt_at <= now() and q.sender = '${FORWARD_SENDER}'
    and q.source = any($1::text[])
    and not exists (
      select 1 from ${s}.forward_destinations d
      where d.source = q.source and (d.disabled_at is not null or d.paused_until > now())
    )
  order by q.next_attempt_at
  limit $2::int + ${LOOK_AHEAD}
  for update skip locked
), chosen as (
  select source, dedupe_key, message_key from look where free order by next_attempt_at limit $2::int
), deferred as (
  update ${s}.outbox d set next_attempt_at = now() + ${WAIT_DEFER_MS} * interval '1 millisecond'
  from look l
  where not l.free and d.source = l.source and d.dedupe_key = l.dedupe_key and d.message_key = l.message_key
)
update ${s}.outbox o
set attempts = o.attempts + 1, next_attempt_at = now() + $3::bigint * interval '1 millisecond'
from chosen p
where o.source = p.source and o.dedupe_key = p.dedupe_key and o.message_key = p.message_key
returning o.source, o.dedupe_key, o.message_key, o.idempotency_key, o.payload, o.body, o.attempts,
  o.ordering_key is not null and exists (
    select 1 from ${s}.outbox n
    where n.source = o.source and n.ordering_key = o.ordering_key and n.ordering_key is not null
      and n.status = 'sent' and n.ordering_version > o.ordering_version
  ) as stale`,
);

interface Row {
  source: string;
  dedupe_key: string;
  message_key: string;
  idempotency_key: string;
  payload: { provider?: string; type?: string };
  body: Buffer;
  attempts: number;
  stale: boolean;
}

/**
 * Takes up to `limit` due forwards of the given sources, counting an attempt of each and leasing them for
 * `leaseMs`; concurrent callers take different ones, and never two of one entity when ordered.
 *
 * @example
 * const due = await takeForwards(pool, ledger, { sources: ["stripe"], limit: 16, leaseMs: 20_000 });
 */
export async function takeForwards(
  db: Queryable,
  ledger: LedgerContext,
  options: { sources: readonly string[]; limit: number; leaseMs: number },
): Promise<TakenForward[]> {
  const { rows } = await db.query<Row>({
    ...takeSql(ledger),
    values: [[...options.sources], options.limit, Math.round(options.leaseMs)],
  });
  return rows.map((r) => ({
    source: r.source,
    dedupeKey: r.dedupe_key,
    messageKey: r.message_key,
    idempotencyKey: r.idempotency_key,
    provider: r.payload.provider ?? "",
    type: r.payload.type ?? "",
    body: r.body,
    attempts: r.attempts,
    stale: r.stale,
  }));
}

/** What one attempt's call gave: the status (none for a network failure), its time and the answer's first bytes. */
export interface ForwardCall {
  readonly status: number | null;
  readonly ms: number;
  readonly error: string | null;
  readonly snippet: string | null;
}

/**
 * How a forward's attempt ended: `sent`; `retry` (due again in `inMs`); `dead`; `disable` (the destination
 * answered 410: it is disabled and the message waits, this attempt given back); `stale` (not sent: a newer version
 * of its entity was delivered); `given-back` (the process stopped). Each but these last two is recorded as an attempt; `retry` and `dead` count towards the breaker, `sent` resets it.
 *
 * @example
 * const end: ForwardEnd = { kind: "retry", inMs: 5000, call: { status: 503, ms: 12, error: "HTTP 503", snippet: "" } };
 */
export type ForwardEnd =
  | { readonly kind: "sent"; readonly call: ForwardCall }
  | { readonly kind: "retry"; readonly inMs: number; readonly call: ForwardCall }
  | { readonly kind: "dead"; readonly call: ForwardCall }
  | { readonly kind: "disable"; readonly call: ForwardCall }
  | { readonly kind: "stale" }
  | { readonly kind: "given-back" };

/** When the breaker opens, and how long it stays open. */
export interface BreakerPolicy {
  /** Consecutive failed attempts of a destination (across its events) that pause it. */
  readonly threshold: number;
  /** The first pause; each further failure doubles it, up to `maxPauseMs`. */
  readonly pauseMs: number;
  readonly maxPauseMs: number;
}

const recordAttempt = (s: string, from: string) => `attempt as (
  insert into ${s}.forward_attempts (source, dedupe_key, attempt, status, ms, error, snippet)
  select $1::text, $2::text, $4::int, $5::int, $6::int, $7::text, $8::text from ${from}
)`;

// One failure more for the breaker: past the threshold the destination pauses, for longer with each failure.
const failureCounted = (s: string, t: number) => `counted as (
  insert into ${s}.forward_destinations as d (source, failures) select $1::text, 1 from ended
  on conflict (source) do update set failures = d.failures + 1,
    paused_until = case when d.failures + 1 >= $${t}::int
      then now() + least($${t + 2}::bigint, $${t + 1}::bigint * 2 ^ least(30, d.failures + 1 - $${t}::int))
        * interval '1 millisecond'
      else d.paused_until end
)`;

const retrySql = statement(
  "forward-retry-later",
  (s) => `with ended as (
  update ${s}.outbox set last_error = $7::text, last_status = $5::int,
    next_attempt_at = now() + $9::bigint * interval '1 millisecond'
  where ${fence} returning 1
), ${recordAttempt(s, "ended")}, ${failureCounted(s, 10)}
select count(*)::int as n from ended`,
);

const deadSql = statement(
  "forward-dead",
  (s) => `with ended as (
  update ${s}.outbox set status = 'dead', last_error = $7::text, last_status = $5::int
  where ${fence} returning source, ordering_key
), ${recordAttempt(s, "ended")}, ${failureCounted(s, 9)}, ${wakeWaiting(s, "ended")}
select count(*)::int as n from ended`,
);

const disableSql = statement(
  "forward-disable",
  (s) => `with ended as (
  update ${s}.outbox set attempts = attempts - 1, next_attempt_at = now(), last_error = $7::text,
    last_status = $5::int
  where ${fence} returning 1
), ${recordAttempt(s, "ended")}, disabled as (
  insert into ${s}.forward_destinations as d (source, disabled_at, disabled_reason)
  select $1::text, now(), $7::text from ended
  on conflict (source) do update set disabled_at = coalesce(d.disabled_at, now()),
    disabled_reason = coalesce(d.disabled_reason, excluded.disabled_reason)
)
select count(*)::int as n from ended`,
);

const staleSql = statement(
  "forward-stale",
  (s) => `with ended as (
  update ${s}.outbox set status = 'stale', last_error = 'a newer version of its entity was delivered first'
  where ${fence} returning source, ordering_key
), ${wakeWaiting(s, "ended")}
select count(*)::int as n from ended`,
);

const giveBackSql = statement(
  "forward-give-back",
  (s) => `update ${s}.outbox set attempts = attempts - 1, next_attempt_at = now() where ${fence}`,
);

/**
 * Records how a taken forward's attempt ended, with its attempt row and the destination's breaker, fenced by the
 * attempt; returns false when the lease was lost (another attempt took the message), and nothing was written. A
 * `sent` end is recorded in batches by `recordForwardsSent` (forward-sent.ts).
 *
 * @example
 * await endForwardAttempt(pool, ledger, taken, { kind: "retry", inMs: 5000, call }, breaker);
 */
export async function endForwardAttempt(
  db: Queryable,
  ledger: LedgerContext,
  m: TakenForward,
  end: Exclude<ForwardEnd, { kind: "sent" }>,
  breaker: BreakerPolicy,
): Promise<boolean> {
  const key = [m.source, m.dedupeKey, m.messageKey, m.attempts];
  if (end.kind === "given-back") {
    const { rowCount } = await db.query({ ...giveBackSql(ledger), values: key });
    return (rowCount ?? 0) > 0;
  }
  if (end.kind === "stale") {
    const { rows } = await db.query<{ n: number }>({ ...staleSql(ledger), values: key });
    return (rows[0]?.n ?? 0) > 0;
  }
  const c = end.call;
  const call = [c.status, Math.round(c.ms), c.error, c.snippet];
  const counted = [breaker.threshold, breaker.pauseMs, breaker.maxPauseMs];
  const query =
    end.kind === "retry"
      ? { ...retrySql(ledger), values: [...key, ...call, Math.round(end.inMs), ...counted] }
      : end.kind === "dead"
        ? { ...deadSql(ledger), values: [...key, ...call, ...counted] }
        : { ...disableSql(ledger), values: [...key, ...call] };
  const { rows } = await db.query<{ n: number }>(query);
  return (rows[0]?.n ?? 0) > 0;
}
