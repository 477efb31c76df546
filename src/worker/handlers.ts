import type { PoolClient } from "../db/pool.js";
import type { ArrivedVia } from "../ledger/claim.js";

/** The event a handler receives. */
export interface HandlerEvent<P = unknown> {
  /** The provider's event id (the dedupe key): pass it as the idempotency key to downstream APIs. */
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly payload: P;
  readonly receivedAt: Date;
  readonly occurredAt: Date | null;
  /** 1 on the first attempt. */
  readonly attempt: number;
  /** The entity and version the provider reported, used by `ctx.advance()` without arguments. */
  readonly entity: { readonly type: string; readonly id: string; readonly version: string } | null;
  readonly arrivedVia: ArrivedVia;
}

/** What a handler gets: the event, the transaction and the version guard. */
export interface HandlerContext<P = unknown> {
  readonly event: HandlerEvent<P>;
  /**
   * A client inside the event's transaction: business writes made through it commit together with the guard and
   * the settle, or not at all. Do not commit, roll back or release it.
   */
  readonly tx: PoolClient;
  /**
   * The version guard (docs/architecture.md §6). Returns false when a newer version of the entity was already applied: skip
   * the writes and return; the event settles as `stale`. Equal versions advance. Without arguments it guards the
   * entity the provider reported. A number or numeric string is stored as given; a `Date` or ISO 8601 string as
   * milliseconds (Stripe's own version, `created`, is in seconds: pass seconds for Stripe entities).
   *
   * @example
   * if (!(await ctx.advance("subscription", sub.id, ctx.event.payload.created))) return;
   */
  advance(entityType?: string, entityId?: string, version?: number | string | Date): Promise<boolean>;
  /** Marks the event `ignored` (settled, deliberately not acted on). */
  ignore(): void;
}

/** A function that applies one event. Throwing rolls back its writes and schedules a retry. */
export type Handler<P = unknown> = (ctx: HandlerContext<P>) => Promise<void> | void;

/**
 * Handlers by source and event type. `"*"` as the type matches any type the source has no specific handler for.
 *
 * @example
 * const handlers = new Handlers()
 *   .on<Stripe.Event>("stripe", "customer.subscription.updated", async (ctx) => {
 *     if (!(await ctx.advance())) return;
 *     await ctx.tx.query("update subscriptions set status = $1 where id = $2", [...]);
 *   });
 */
export class Handlers {
  readonly #bySource = new Map<string, Map<string, Handler>>();

  /** Registers `handler` for events of `type` from `source`. One handler per pair; registering twice throws. */
  on<P = unknown>(source: string, type: string, handler: Handler<P>): this {
    const byType = this.#bySource.get(source) ?? new Map<string, Handler>();
    this.#bySource.set(source, byType);
    if (byType.has(type)) throw new Error(`a handler for ${source}/${type} is already registered`);
    byType.set(type, handler as Handler);
    return this;
  }

  /** The handler for an event, or `undefined` (the event then settles as `unhandled`). */
  find(source: string, type: string): Handler | undefined {
    const byType = this.#bySource.get(source);
    return byType?.get(type) ?? byType?.get("*");
  }

  /** The sources that have at least one handler. */
  sources(): string[] {
    return [...this.#bySource.keys()];
  }
}
