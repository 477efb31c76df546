import type { LedgerContext } from "../ledger/context.js";
import { writeForward } from "../ledger/forward-write.js";
import { type Handler, Handlers } from "../worker/handlers.js";
import type { ResolvedForward } from "./destination.js";

// The handlers the worker runs for a source with `forward`: its own handler (if any), then the forward written in
// the same transaction, with the provider's entity and version when ordered. Order is kept by the take
// (forward-take.ts), not here: the worker may run one entity's events in any order, and an event that ran after a
// newer one must still be delivered first when both are waiting.
class ForwardingHandlers extends Handlers {
  constructor(
    readonly inner: Handlers,
    readonly forwards: ReadonlyMap<string, ResolvedForward>,
    readonly ledger: LedgerContext,
  ) {
    super();
  }

  override find(source: string, type: string): Handler | undefined {
    const own = this.inner.find(source, type);
    const forward = this.forwards.get(source);
    if (!forward) return own;
    return async (ctx) => {
      const entity = forward.ordering === "entity" ? ctx.event.entity : null;
      if (own) await own(ctx);
      await writeForward(ctx.tx, this.ledger, {
        source,
        dedupeKey: ctx.event.id,
        receivedAt: ctx.event.receivedAt,
        provider: forward.provider,
        type: ctx.event.type,
        ordering: entity && { key: JSON.stringify([entity.type, entity.id]), version: entity.version },
      });
    };
  }

  override sources(): string[] {
    return [...new Set([...this.inner.sources(), ...this.forwards.keys()])];
  }
}

/**
 * `handlers` with the forward of every source in `forwards` added to its events' transactions.
 *
 * @example
 * const all = forwardingHandlers(handlers, forwards, ledger);
 */
export function forwardingHandlers(
  handlers: Handlers,
  forwards: ReadonlyMap<string, ResolvedForward>,
  ledger: LedgerContext,
): Handlers {
  return forwards.size === 0 ? handlers : new ForwardingHandlers(handlers, forwards, ledger);
}
