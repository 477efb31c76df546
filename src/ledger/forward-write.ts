import { type LedgerContext, type Queryable, statement } from "./context.js";
import { wakeWaiting } from "./forward-wake.js";
import { outboxIdempotencyKey } from "./outbox-write.js";

/** The outbox sender of forwarded events, and the message key of an event's forward (user keys never start with `#`). */
export const FORWARD_SENDER = "forward";
export const FORWARD_KEY = "#forward";

/** The channel whose NOTIFY, at the commit of an event that wrote its forward, wakes the forward engines. */
export const forwardChannel = (ledger: LedgerContext): string => `${ledger.schema}_forward`;

// The body is copied from event_bodies inside the statement, so the provider's bytes never pass through Node. The
// receipt time narrows the copy to the body's partition; pg gives it to Node truncated to the millisecond (and a
// float's rounding may take one more off), so the range is a few milliseconds wide: one event has one body. An
// event that runs again (a requeue) meets its forward: a dead one is due again with its attempts reset, a pending
// or sent one is left alone (sent once in effect). Its entity's messages deferred while they waited for this event
// are woken (forward-take.ts).
const writeSql = statement(
  "forward-write",
  (s) => `with body as (
  select b.body, b.received_at from ${s}.event_bodies b
  where b.source = $1::text and b.dedupe_key = $2::text
    and b.received_at >= $3::timestamptz - interval '1 millisecond'
    and b.received_at < $3::timestamptz + interval '2 milliseconds'
  limit 1
), written as (
  insert into ${s}.outbox as o
    (source, dedupe_key, message_key, sender, idempotency_key, payload, body, ordering_key, ordering_version,
      event_received_at)
  select $1::text, $2::text, '${FORWARD_KEY}', '${FORWARD_SENDER}', $4::text,
    jsonb_build_object('provider', $5::text, 'type', $6::text), body.body, $7::text, $9::numeric,
    body.received_at
  from body
  on conflict (source, dedupe_key, message_key) do update
    set status = 'pending', attempts = 0, next_attempt_at = now(), last_error = null, last_status = null
    where o.status = 'dead'
  returning 1
), entity as (
  select $1::text as source, $7::text as ordering_key from written
), ${wakeWaiting(s, "entity")}
select (select count(*) from body)::int as found, (select pg_notify($8::text, '') from written) is not null as written`,
);

/**
 * Writes the forward of one event in its transaction: a message of the sender `forward` carrying the provider's
 * bytes, in its entity's version order when `ordering` is given. Returns false when it was written already; throws
 * when the event's body is gone (the attempt fails, nothing is forwarded without its bytes).
 *
 * @example
 * await writeForward(ctx.tx, ledger, { source: "stripe", dedupeKey: "evt_1", receivedAt, provider: "stripe", type: "invoice.paid", ordering: null });
 */
export async function writeForward(
  tx: Queryable,
  ledger: LedgerContext,
  input: {
    source: string;
    dedupeKey: string;
    receivedAt: Date;
    provider: string;
    type: string;
    /** The entity and its version, for `ordering: "entity"`; null: unordered. */
    ordering: { readonly key: string; readonly version: string } | null;
  },
): Promise<boolean> {
  const { rows } = await tx.query<{ found: number; written: boolean }>({
    ...writeSql(ledger),
    values: [
      input.source,
      input.dedupeKey,
      input.receivedAt,
      outboxIdempotencyKey(input.source, input.dedupeKey, FORWARD_KEY),
      input.provider,
      input.type,
      input.ordering?.key ?? null,
      forwardChannel(ledger),
      input.ordering?.version ?? null,
    ],
  });
  const [row] = rows;
  if (!row || row.found === 0) {
    throw new Error(
      `the body of ${input.source} event ${input.dedupeKey} is not in the ledger; it cannot be forwarded`,
    );
  }
  return row.written;
}
