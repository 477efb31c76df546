import type { HookledgerConfig } from "../config/types.js";
import type { Pool } from "../db/pool.js";
import type Stripe from "stripe";
import { type HandlerContext, Handlers } from "../worker/handlers.js";

/** Development secrets of the demo sources, printed in the README. Never use them for a real endpoint. */
export const DEMO_SECRETS = {
  stripe: "whsec_hookledger_demo_only_stripe",
  github: "hookledger-demo-only-github",
} as const;

type SubscriptionEvent =
  | Stripe.CustomerSubscriptionCreatedEvent
  | Stripe.CustomerSubscriptionUpdatedEvent
  | Stripe.CustomerSubscriptionDeletedEvent;

/** Creates the demo's business tables: a subscription's plan and status per customer, and GitHub pushes. */
export async function setupDemo(pool: Pool): Promise<void> {
  await pool.query(`create schema if not exists hookledger_demo;
create table if not exists hookledger_demo.subscriptions (
  subscription_id text primary key, customer_id text not null, plan text, status text not null,
  updated_by_event text not null, updated_at timestamptz not null default now());
create table if not exists hookledger_demo.pushes (
  delivery_id text primary key, repository text not null, ref text, head_commit text,
  received_at timestamptz not null default now())`);
}

/**
 * The demo's handlers. The subscription handler is the pattern to copy: the version guard first, then the
 * business write, in the transaction hookledger settles the event in.
 */
export function demoHandlers(): Handlers {
  const applySubscription = async (ctx: HandlerContext<SubscriptionEvent>) => {
    // Stripe delivers out of order: an older snapshot of the subscription must not overwrite a newer one.
    if (!(await ctx.advance())) return;
    const sub = ctx.event.payload.data.object;
    const status = ctx.event.type === "customer.subscription.deleted" ? "canceled" : sub.status;
    const customer = typeof sub.customer === "string" ? sub.customer : sub.customer.id;
    await ctx.tx.query(
      `insert into hookledger_demo.subscriptions (subscription_id, customer_id, plan, status, updated_by_event)
       values ($1, $2, $3, $4, $5)
       on conflict (subscription_id) do update
         set plan = excluded.plan, status = excluded.status, updated_by_event = excluded.updated_by_event,
             updated_at = now()`,
      [sub.id, customer, sub.items.data[0]?.price.id ?? null, status, ctx.event.id],
    );
  };
  return new Handlers()
    .on("stripe", "customer.subscription.created", applySubscription)
    .on("stripe", "customer.subscription.updated", applySubscription)
    .on("stripe", "customer.subscription.deleted", applySubscription)
    .on("github", "push", async (ctx) => {
      const push = ctx.event.payload;
      await ctx.tx.query(
        "insert into hookledger_demo.pushes (delivery_id, repository, ref, head_commit) values ($1, $2, $3, $4)",
        [ctx.event.id, push.repository.full_name, push.ref, push.after],
      );
    })
    .on("github", "ping", (ctx) => ctx.ignore());
}

/**
 * The configuration `npm start` serves when no `hookledger.config.mjs` exists: sources `stripe` and `github`
 * with development secrets.
 *
 * @example
 * await startService(resolveConfig(demoConfig()), { log, serve: true, work: true, setup: setupDemo });
 */
export function demoConfig(): HookledgerConfig {
  return {
    sources: [
      { name: "stripe", provider: "stripe", secrets: [DEMO_SECRETS.stripe] },
      { name: "github", provider: "github", secrets: [DEMO_SECRETS.github] },
    ],
    handlers: demoHandlers(),
  };
}
