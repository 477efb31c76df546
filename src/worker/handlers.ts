import type { PoolClient } from "../db/pool.js";
import type { ArrivedVia } from "../ledger/claim.js";
import type { OutboxWriter } from "../outbox/writer.js";
import type { PayloadOf, SourceEventType, SourceMap } from "./payloads.js";

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
   * the writes and return; the event settles as `stale`. Equal versions advance, unless an event received later than
   * this one applied that version (the event received last wins). Without arguments it guards the entity the
   * provider reported. A number or numeric string is stored as given; a `Date` or ISO 8601 string as
   * milliseconds (Stripe's own version, `created`, is in seconds: pass seconds for Stripe entities).
   *
   * @example
   * if (!(await ctx.advance("subscription", sub.id, ctx.event.payload.created))) return;
   */
  advance(entityType?: string, entityId?: string, version?: number | string | Date): Promise<boolean>;
  /** Marks the event `ignored` (settled, deliberately not acted on). */
  ignore(): void;
  /**
   * Messages sent after the event's transaction commits, once in effect (docs/outbox.md): an email, a refund, a
   * call to another API. Nothing is sent if the attempt rolls back; no transaction is held across the call.
   *
   * @example
   * await ctx.outbox.send("refund", { paymentIntent: ctx.event.payload.data.object.id });
   */
  readonly outbox: OutboxWriter;
}

/** A function that applies one event. Throwing rolls back its writes and schedules a retry. */
export type Handler<P = unknown> = (ctx: HandlerContext<P>) => Promise<void> | void;

/**
 * Handlers by source and event type. `"*"` as the type matches any type the source has no specific handler for.
 *
 * `ctx.event.payload` is typed from the provider's own types: Stripe's from the `stripe` package
 * (`"customer.subscription.updated"` → `Stripe.CustomerSubscriptionUpdatedEvent`), GitHub's from
 * `@octokit/webhooks-types` (`"issues.opened"` → `IssuesOpenedEvent`, `"push"` → `PushEvent`), Paddle's and
 * Standard Webhooks' envelopes from `PaddleNotification` and `StandardWebhookPayload`; `"*"` gets the provider's
 * union. A source named after its provider needs nothing; name the others in the source map `M`, by provider or
 * by a payload map of your own. Anything else (Shopify, Slack, awardee, generic, an unknown source or a type the
 * SDK does not know) is `unknown`: narrow it in the handler. Only the types are imported; without the `stripe` or
 * `@octokit/webhooks-types` package (and `skipLibCheck`), that provider's payloads are `unknown` too.
 *
 * @example
 * import { Handlers } from "hookledger";
 *
 * const handlers = new Handlers<{ "stripe-eu": "stripe" }>()
 *   .on("stripe-eu", "customer.subscription.updated", async (ctx) => {
 *     if (!(await ctx.advance())) return;
 *     const sub = ctx.event.payload.data.object; // Stripe.Subscription
 *     await ctx.tx.query("update subscriptions set status = $1 where id = $2", [sub.status, sub.id]);
 *   })
 *   .on("github", "pull_request.opened", (ctx) => console.log(ctx.event.payload.pull_request.title));
 */
// The default `any` is read as the empty map (see `ProviderOf`), and makes the bare type `Handlers`, which the
// configuration and the worker accept, stand for handlers of any source map.
// biome-ignore lint/suspicious/noExplicitAny: see above
export class Handlers<M extends SourceMap = any> {
  readonly #bySource = new Map<string, Map<string, Handler>>();

  /**
   * Registers `handler` for events of `type` from `source`. One handler per pair; registering twice throws.
   *
   * @example
   * new Handlers().on("github", "push", (ctx) => console.log(ctx.event.payload.ref));
   */
  on<S extends string, T extends string>(
    source: S,
    type: T | SourceEventType<M, S>,
    handler: Handler<PayloadOf<M, S, T>>,
  ): this {
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
