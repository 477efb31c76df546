import type { LedgerContext, Queryable } from "../ledger/context.js";
import { FORWARD_SENDER } from "../ledger/forward-write.js";
import { outboxIdempotencyKey, writeOutboxMessage } from "../ledger/outbox-write.js";

/**
 * Options of one `ctx.outbox.send`.
 *
 * @example
 * await ctx.outbox.send("email", { to }, { key: "receipt" } satisfies SendOptions);
 */
export interface SendOptions {
  /**
   * The message's own key within its event, instead of its position among the event's sends: keep it when a
   * handler's sends depend on data that may change between attempts. Not starting with `#`.
   */
  readonly key?: string;
}

/** `ctx.outbox`: writes messages in the event's transaction, sent once it has committed. */
export interface OutboxWriter {
  /**
   * Writes a message for the sender `name`, in the event's transaction: if the attempt rolls back, no message
   * exists; if it commits, the message is sent once in effect (docs/outbox.md). An event that runs again (a retry,
   * a requeue) sends the same messages under the same keys, and one already written is not written twice.
   * Resolves with the message's idempotency key, the one its sender gets. A name no sender of this worker has is
   * written dead, saying which names exist.
   *
   * @example
   * const key = await ctx.outbox.send("http", { url: "https://crm.internal/hooks", body: { id: ctx.event.id } });
   */
  send(name: string, payload: unknown, options?: SendOptions): Promise<string>;
}

/**
 * The `ctx.outbox` of one attempt: positions count from 0 in call order, so every attempt of the event derives
 * the same keys. `senders`: the names this worker can send, or undefined to accept any name.
 *
 * @example
 * const outbox = outboxWriter(ctx.tx, ledger, { source: "stripe", dedupeKey: "evt_1" }, ["http", "email"]);
 */
export function outboxWriter(
  tx: Queryable,
  ledger: LedgerContext,
  event: { readonly source: string; readonly dedupeKey: string },
  senders: readonly string[] | undefined,
): OutboxWriter {
  let position = 0;
  return {
    async send(name, payload, options = {}) {
      if (typeof name !== "string" || name === "") throw new TypeError("ctx.outbox.send: name a sender");
      // Forward mode's messages share the table; one named `forward` would be taken by the forward engine.
      if (name === FORWARD_SENDER) {
        throw new TypeError(
          `ctx.outbox.send: the name ${name} is reserved for forward mode (docs/forwarding.md)`,
        );
      }
      const own = options.key;
      if (own !== undefined && (typeof own !== "string" || own === "" || own.startsWith("#"))) {
        throw new TypeError(
          `ctx.outbox.send: key must be a non-empty string not starting with "#", got ${JSON.stringify(own)}`,
        );
      }
      const messageKey = own ?? `#${position++}`;
      const deadReason =
        senders === undefined || senders.includes(name)
          ? undefined
          : `no outbox sender named ${JSON.stringify(name)}; the senders are ${senders.join(", ")}`;
      await writeOutboxMessage(tx, ledger, {
        source: event.source,
        dedupeKey: event.dedupeKey,
        messageKey,
        sender: name,
        payload,
        ...(deadReason !== undefined && { deadReason }),
      });
      return outboxIdempotencyKey(event.source, event.dedupeKey, messageKey);
    },
  };
}
