import { type LedgerContext, type Queryable, statement } from "./context.js";
import { forwardChannel } from "./forward-write.js";
import { outboxChannel } from "./outbox-write.js";

/** The states of an outbox message. */
export const OUTBOX_STATUSES = ["pending", "sent", "dead", "stale"] as const;
/**
 * `pending` (due, retrying or being sent), `sent`, `dead` (never tried again unless retried), or `stale` (an
 * ordered forward not sent: a newer version of its entity was delivered first).
 */
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

/**
 * One outbox message as `hookledger outbox list|show` and the dashboard show it; its payload only in detail.
 *
 * @example
 * const line = `${m.idempotencyKey} ${m.sender} ${m.status} after ${m.attempts} attempts`;
 */
export interface OutboxSummary {
  readonly source: string;
  /** The event that wrote it (`ctx.event.id`). */
  readonly eventId: string;
  readonly key: string;
  readonly sender: string;
  readonly idempotencyKey: string;
  readonly status: OutboxStatus;
  readonly attempts: number;
  readonly nextAttemptAt: Date;
  readonly createdAt: Date;
  readonly sentAt: Date | null;
  readonly lastError: string | null;
  readonly lastStatus: number | null;
}

/** An outbox message with its payload. */
export interface OutboxDetail extends OutboxSummary {
  readonly payload: unknown;
}

/**
 * Which messages to list or retry; every field narrows.
 *
 * @example
 * const filter: OutboxFilter = { status: "dead", sender: "refund" };
 */
export interface OutboxFilter {
  readonly status?: OutboxStatus;
  readonly source?: string;
  readonly sender?: string;
}

const columns = `source, dedupe_key, message_key, sender, idempotency_key, status, attempts, next_attempt_at,
  created_at, sent_at, last_error, last_status`;
const where = `($1::text is null or status = $1::text) and ($2::text is null or source = $2::text)
  and ($3::text is null or sender = $3::text)`;

const listSql = statement(
  "outbox-list",
  (s) =>
    `select ${columns} from ${s}.outbox where ${where} order by created_at desc, source, dedupe_key, message_key limit $4::int`,
);
const showSql = statement(
  "outbox-show",
  (s) => `select ${columns}, payload from ${s}.outbox where idempotency_key = $1::text`,
);

interface Row {
  source: string;
  dedupe_key: string;
  message_key: string;
  sender: string;
  idempotency_key: string;
  status: OutboxStatus;
  attempts: number;
  next_attempt_at: Date;
  created_at: Date;
  sent_at: Date | null;
  last_error: string | null;
  last_status: number | null;
  payload?: unknown;
}

function summary(r: Row): OutboxSummary {
  return {
    source: r.source,
    eventId: r.dedupe_key,
    key: r.message_key,
    sender: r.sender,
    idempotencyKey: r.idempotency_key,
    status: r.status,
    attempts: r.attempts,
    nextAttemptAt: r.next_attempt_at,
    createdAt: r.created_at,
    sentAt: r.sent_at,
    lastError: r.last_error,
    lastStatus: r.last_status,
  };
}

/**
 * The newest `limit` messages matching `filter`.
 *
 * @example
 * const dead = await listOutbox(pool, ledger, { status: "dead" }, 50);
 */
export async function listOutbox(
  db: Queryable,
  ledger: LedgerContext,
  filter: OutboxFilter,
  limit: number,
): Promise<OutboxSummary[]> {
  const { rows } = await db.query<Row>({
    ...listSql(ledger),
    values: [filter.status ?? null, filter.source ?? null, filter.sender ?? null, limit],
  });
  return rows.map(summary);
}

/**
 * The message with this idempotency key, with its payload, or undefined.
 *
 * @example
 * const message = await getOutboxMessage(pool, ledger, "hl_…");
 */
export async function getOutboxMessage(
  db: Queryable,
  ledger: LedgerContext,
  idempotencyKey: string,
): Promise<OutboxDetail | undefined> {
  const { rows } = await db.query<Row>({ ...showSql(ledger), values: [idempotencyKey] });
  const row = rows[0];
  return row && { ...summary(row), payload: row.payload };
}

// A retried message starts its attempts over and is due now; its last error stays until the next attempt's end.
const retrySql = statement(
  "outbox-retry",
  (s) => `with retried as (
  update ${s}.outbox set status = 'pending', attempts = 0, next_attempt_at = now()
  where status = 'dead' and (idempotency_key = any($4::text[]) or ($4::text[] is null and ${where}))
  returning idempotency_key
)
select idempotency_key, pg_notify($5::text, ''), pg_notify($6::text, '') from retried`,
);

/**
 * Sends dead messages again: those with the given idempotency keys, or every dead one matching `filter`. Returns
 * the keys retried; a key that is not dead (pending, sent, or unknown) is left as it is.
 *
 * @example
 * const retried = await retryOutbox(pool, ledger, { filter: { sender: "refund" } });
 */
export async function retryOutbox(
  db: Queryable,
  ledger: LedgerContext,
  which: { readonly keys: readonly string[] } | { readonly filter: OutboxFilter },
): Promise<string[]> {
  const filter = "filter" in which ? which.filter : {};
  const { rows } = await db.query<{ idempotency_key: string }>({
    ...retrySql(ledger),
    values: [
      null,
      filter.source ?? null,
      filter.sender ?? null,
      "keys" in which ? [...which.keys] : null,
      outboxChannel(ledger),
      // A forward is a message too: its engine listens on a channel of its own.
      forwardChannel(ledger),
    ],
  });
  return rows.map((r) => r.idempotency_key);
}
