import { createHash } from "node:crypto";
import { type LedgerContext, type Queryable, statement } from "./context.js";

/** One message as a handler writes it into the outbox, inside its event's transaction. */
export interface OutboxWrite {
  readonly source: string;
  readonly dedupeKey: string;
  /** "#0", "#1", … in call order, or the handler's own key. */
  readonly messageKey: string;
  readonly sender: string;
  readonly payload: unknown;
  /** Set: the message is written dead at once with this reason (a sender this worker does not know). */
  readonly deadReason?: string;
}

/** The channel whose NOTIFY, sent at the commit of a transaction that wrote a message, wakes the senders. */
export const outboxChannel = (ledger: LedgerContext): string => `${ledger.schema}_outbox`;

/**
 * The idempotency key of a message: a hash of its event's source and key and its own key, so every attempt of
 * every process derives the same one. 32 base64url characters (192 bits) fit every downstream limit we know of
 * (Stripe's `Idempotency-Key` takes 255, an SMTP `Message-ID` has no short limit).
 *
 * @example
 * outboxIdempotencyKey("stripe", "evt_1", "#0"); // "hl_…"
 */
export function outboxIdempotencyKey(source: string, dedupeKey: string, messageKey: string): string {
  const digest = createHash("sha256")
    .update(JSON.stringify([source, dedupeKey, messageKey]))
    .digest("base64url");
  return `hl_${digest.slice(0, 32)}`;
}

// `do nothing`: an event that runs again (a requeue after it settled) meets the messages its first run wrote, and
// they are not sent twice. The NOTIFY goes only with a row this statement inserted, and only at commit (a message
// written dead wakes the senders for nothing: rare, and harmless).
const writeSql = statement(
  "outbox-write",
  (s) => `with written as (
  insert into ${s}.outbox (source, dedupe_key, message_key, sender, idempotency_key, payload, status, last_error)
  values ($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::text, $8::text)
  on conflict (source, dedupe_key, message_key) do nothing
  returning 1
)
select pg_notify($9::text, '') from written`,
);

/**
 * Writes one message in the transaction of `tx`; returns false when its event had written it already.
 *
 * @example
 * await writeOutboxMessage(ctx.tx, ledger, { source: "stripe", dedupeKey: "evt_1", messageKey: "#0", sender: "email", payload: {} });
 */
export async function writeOutboxMessage(
  tx: Queryable,
  ledger: LedgerContext,
  message: OutboxWrite,
): Promise<boolean> {
  const json = JSON.stringify(message.payload);
  if (json === undefined)
    throw new TypeError("ctx.outbox.send: the payload must be JSON (got undefined or a function)");
  const { rowCount } = await tx.query({
    ...writeSql(ledger),
    values: [
      message.source,
      message.dedupeKey,
      message.messageKey,
      message.sender,
      outboxIdempotencyKey(message.source, message.dedupeKey, message.messageKey),
      json,
      message.deadReason === undefined ? "pending" : "dead",
      message.deadReason ?? null,
      outboxChannel(ledger),
    ],
  });
  return (rowCount ?? 0) > 0;
}
