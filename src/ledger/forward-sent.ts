import { type LedgerContext, type Queryable, statement } from "./context.js";
import type { ForwardCall, TakenForward } from "./forward-take.js";
import { wakeWaiting } from "./forward-wake.js";

// The `sent` end of many forwards in one statement: each update is fenced by its own attempt (as forward-take.ts's
// single ends), and the statement returns the ones it recorded. One commit for a batch instead of one per delivery
// roughly halves Postgres's work per forwarded event (docs/benchmarks.md, "Forwarding"). The messages waiting behind
// the ones sent are woken.
const sentManySql = statement(
  "forward-sent-many",
  (s) => `with input as (
  select * from unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[])
    as t(source, dedupe_key, message_key, attempt, status, ms, snippet)
), ended as (
  update ${s}.outbox o set status = 'sent', sent_at = now(), last_error = null, last_status = i.status
  from input i
  where o.source = i.source and o.dedupe_key = i.dedupe_key and o.message_key = i.message_key
    and o.attempts = i.attempt and o.status = 'pending'
  returning o.source, o.dedupe_key, o.message_key, o.ordering_key, i.attempt, i.status, i.ms, i.snippet
), ${wakeWaiting(s, "ended")}, attempt as (
  insert into ${s}.forward_attempts (source, dedupe_key, attempt, status, ms, error, snippet)
  select source, dedupe_key, attempt, status, ms, null, snippet from ended
), reset as (
  update ${s}.forward_destinations set failures = 0, paused_until = null
  where source in (select source from ended) and failures > 0
)
select source, dedupe_key, message_key, attempt from ended`,
);

/** One delivered forward to record: the message as taken and its call's answer. */
export interface SentForward {
  readonly message: TakenForward;
  readonly call: ForwardCall;
}

const keyOf = (source: string, dedupeKey: string, messageKey: string, attempt: number) =>
  JSON.stringify([source, dedupeKey, messageKey, attempt]);

/**
 * Records many forwards as sent in one statement, with their attempt rows, and closes their destinations'
 * breakers; returns, in input order, whether each was recorded (false: its lease was lost, nothing was written).
 *
 * @example
 * const [recorded] = await recordForwardsSent(pool, ledger, [{ message: taken, call }]);
 */
export async function recordForwardsSent(
  db: Queryable,
  ledger: LedgerContext,
  sent: readonly SentForward[],
): Promise<boolean[]> {
  const { rows } = await db.query<{
    source: string;
    dedupe_key: string;
    message_key: string;
    attempt: number;
  }>({
    ...sentManySql(ledger),
    values: [
      sent.map((s) => s.message.source),
      sent.map((s) => s.message.dedupeKey),
      sent.map((s) => s.message.messageKey),
      sent.map((s) => s.message.attempts),
      sent.map((s) => s.call.status),
      sent.map((s) => Math.round(s.call.ms)),
      sent.map((s) => s.call.snippet),
    ],
  });
  const recorded = new Set(rows.map((r) => keyOf(r.source, r.dedupe_key, r.message_key, r.attempt)));
  return sent.map(({ message: m }) => recorded.has(keyOf(m.source, m.dedupeKey, m.messageKey, m.attempts)));
}
