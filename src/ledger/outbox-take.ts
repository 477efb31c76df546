import { type LedgerContext, type Queryable, statement } from "./context.js";

/**
 * A message taken for sending: its attempt counted and committed, leased until the call's timeout has passed.
 *
 * @example
 * const [message]: readonly TakenMessage[] = await takeOutboxMessages(pool, ledger, { senders: ["email"], limit: 16, leaseMs: 30_000 });
 */
export interface TakenMessage {
  readonly source: string;
  readonly dedupeKey: string;
  readonly messageKey: string;
  readonly sender: string;
  readonly idempotencyKey: string;
  readonly payload: unknown;
  /** This attempt's number, 1 for the first: the fence of its settle. */
  readonly attempts: number;
  readonly createdAt: Date;
}

// One statement that commits on its own: the attempt is counted before the call (a process killed mid-call still
// used it up, so a message that kills its sender reaches dead) and the lease makes every other process skip the
// message until the call's timeout has passed.
const takeSql = statement(
  "outbox-take",
  (s) => `update ${s}.outbox o
set attempts = o.attempts + 1, next_attempt_at = now() + $3::bigint * interval '1 millisecond'
from (
  select q.source, q.dedupe_key, q.message_key from ${s}.outbox q
  where q.status = 'pending' and q.next_attempt_at <= now() and q.sender = any($1::text[])
  order by q.next_attempt_at
  limit $2::int
  for update skip locked
) p
where o.source = p.source and o.dedupe_key = p.dedupe_key and o.message_key = p.message_key
returning o.source, o.dedupe_key, o.message_key, o.sender, o.idempotency_key, o.payload, o.attempts, o.created_at`,
);

interface Row {
  source: string;
  dedupe_key: string;
  message_key: string;
  sender: string;
  idempotency_key: string;
  payload: unknown;
  attempts: number;
  created_at: Date;
}

/**
 * Takes up to `limit` due messages for the given senders, counting an attempt of each and leasing them for
 * `leaseMs`; concurrent callers take different messages.
 *
 * @example
 * const due = await takeOutboxMessages(pool, ledger, { senders: ["email", "http"], limit: 16, leaseMs: 30_000 });
 */
export async function takeOutboxMessages(
  db: Queryable,
  ledger: LedgerContext,
  options: { senders: readonly string[]; limit: number; leaseMs: number },
): Promise<TakenMessage[]> {
  const { rows } = await db.query<Row>({
    ...takeSql(ledger),
    values: [[...options.senders], options.limit, Math.round(options.leaseMs)],
  });
  return rows.map((r) => ({
    source: r.source,
    dedupeKey: r.dedupe_key,
    messageKey: r.message_key,
    sender: r.sender,
    idempotencyKey: r.idempotency_key,
    payload: r.payload,
    attempts: r.attempts,
    createdAt: r.created_at,
  }));
}

/**
 * How an attempt ended: `sent`; `retry` (due again in `inMs`); `dead` (never tried again); `given-back` (the
 * process stopped before the call ended: due now, the attempt not counted).
 *
 * @example
 * const result: AttemptEnd = { kind: "retry", inMs: 5000, error: "HTTP 503", status: 503 };
 */
export type AttemptEnd =
  | { readonly kind: "sent"; readonly status?: number | undefined }
  | {
      readonly kind: "retry";
      readonly inMs: number;
      readonly error: string;
      readonly status?: number | undefined;
    }
  | { readonly kind: "dead"; readonly error: string; readonly status?: number | undefined }
  | { readonly kind: "given-back" };

// Every end is fenced by the attempt that took the message: a call that outlived its lease (the message was taken
// again meanwhile) records nothing, so only the newest attempt decides.
export const fence =
  "source = $1::text and dedupe_key = $2::text and message_key = $3::text and attempts = $4::int and status = 'pending'";
const sentSql = statement(
  "outbox-sent",
  (s) => `update ${s}.outbox set status = 'sent', sent_at = now(), last_error = null, last_status = $5::int
where ${fence}`,
);
const retrySql = statement(
  "outbox-retry-later",
  (s) => `update ${s}.outbox set last_error = $5::text, last_status = $6::int,
  next_attempt_at = now() + $7::bigint * interval '1 millisecond'
where ${fence}`,
);
const deadSql = statement(
  "outbox-dead",
  (s) =>
    `update ${s}.outbox set status = 'dead', last_error = $5::text, last_status = $6::int where ${fence}`,
);
const giveBackSql = statement(
  "outbox-give-back",
  (s) => `update ${s}.outbox set attempts = attempts - 1, next_attempt_at = now() where ${fence}`,
);

/**
 * Records how a taken message's attempt ended; returns false when the lease was lost (another attempt took the
 * message after this one's lease ran out), and nothing was written.
 *
 * @example
 * await endOutboxAttempt(pool, ledger, message, { kind: "sent", status: 200 });
 */
export async function endOutboxAttempt(
  db: Queryable,
  ledger: LedgerContext,
  m: TakenMessage,
  end: AttemptEnd,
): Promise<boolean> {
  const key = [m.source, m.dedupeKey, m.messageKey, m.attempts];
  const query =
    end.kind === "sent"
      ? { ...sentSql(ledger), values: [...key, end.status ?? null] }
      : end.kind === "retry"
        ? { ...retrySql(ledger), values: [...key, end.error, end.status ?? null, Math.round(end.inMs)] }
        : end.kind === "dead"
          ? { ...deadSql(ledger), values: [...key, end.error, end.status ?? null] }
          : { ...giveBackSql(ledger), values: key };
  const { rowCount } = await db.query(query);
  return (rowCount ?? 0) > 0;
}
