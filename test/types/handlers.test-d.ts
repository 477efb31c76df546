// Type tests of the typed handlers: compiled by `npm run typecheck` (tsconfig.json includes test/), never run.
// Each `@ts-expect-error` must meet an error, so a payload that silently became `any` or `unknown` fails here.
import type { IssuesEvent, IssuesOpenedEvent, PushEvent } from "@octokit/webhooks-types";
import {
  createHookledger,
  defineConfig,
  env,
  type HookledgerConfig,
  Handlers,
  type PayloadOf,
  type SourceProviders,
} from "hookledger";
import type Stripe from "stripe";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const expectType = <T extends true>(_: T): void => {};

// A source named after its provider is typed by it.
new Handlers().on("stripe", "customer.subscription.updated", (ctx) => {
  const status: string = ctx.event.payload.data.object.status;
  const id: string = ctx.event.payload.data.object.id;
  expectType<Equal<typeof ctx.event.payload, Stripe.CustomerSubscriptionUpdatedEvent>>(true);
  // @ts-expect-error a subscription has no amount_paid
  ctx.event.payload.data.object.amount_paid;
  // @ts-expect-error the status is a string, not a number
  const wrong: number = ctx.event.payload.data.object.status;
  return void [status, id, wrong];
});

// A named source through the source map; another type of the same provider has its own payload.
new Handlers<{ "stripe-eu": "stripe" }>().on("stripe-eu", "invoice.paid", (ctx) => {
  const paid: number = ctx.event.payload.data.object.amount_paid;
  // @ts-expect-error an invoice has no `plan`
  ctx.event.payload.data.object.plan;
  return void paid;
});

// "*" gets the provider's union, narrowed by `type`.
new Handlers().on("stripe", "*", (ctx) => {
  expectType<Equal<typeof ctx.event.payload, Stripe.Event>>(true);
  if (ctx.event.payload.type === "charge.refunded") {
    const refunded: number = ctx.event.payload.data.object.amount_refunded;
    return void refunded;
  }
});

// GitHub: `X-GitHub-Event` alone, or with `.action`.
new Handlers()
  .on("github", "push", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, PushEvent>>(true);
    const ref: string = ctx.event.payload.ref;
    // @ts-expect-error a push has no action
    ctx.event.payload.action;
    return void ref;
  })
  .on("github", "issues.opened", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, IssuesOpenedEvent>>(true);
    const action: "opened" = ctx.event.payload.action;
    const title: string = ctx.event.payload.issue.title;
    return void [action, title];
  })
  .on("github", "issues", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, IssuesEvent>>(true);
  })
  .on("github", "pull_request.closed", (ctx) => {
    const merged: boolean | null = ctx.event.payload.pull_request.merged;
    // @ts-expect-error a pull request's `closed` action is not `opened`
    const opened: "opened" = ctx.event.payload.action;
    return void [merged, opened];
  });

// A source whose name is not a provider's, absent from the map: unknown. So is a type the SDK does not know.
new Handlers()
  .on("billing-acme", "order.created", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, unknown>>(true);
    // @ts-expect-error unknown has no properties
    ctx.event.payload.id;
  })
  .on("stripe", "not.a.stripe.type", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, unknown>>(true);
  })
  .on("shopify", "orders/create", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, unknown>>(true);
  });

// Envelopes without an SDK: Paddle and Standard Webhooks.
new Handlers<{ paddle: "paddle"; billing: "standard" }>()
  .on("paddle", "subscription.updated", (ctx) => {
    const type: "subscription.updated" = ctx.event.payload.event_type;
    const occurred: string = ctx.event.payload.occurred_at;
    const data: unknown = ctx.event.payload.data.status;
    return void [type, occurred, data];
  })
  .on("billing", "invoice.paid", (ctx) => {
    const timestamp: string = ctx.event.payload.timestamp;
    // @ts-expect-error `data` is not typed field by field
    const total: number = ctx.event.payload.data.total;
    return void [timestamp, total];
  });

// A payload map of the application's own.
type AcmeEvents = { "order.created": { id: string; total: number } };
new Handlers<{ acme: AcmeEvents }>()
  .on("acme", "order.created", (ctx) => {
    const total: number = ctx.event.payload.total;
    // @ts-expect-error not in the declared payload
    ctx.event.payload.currency;
    return void total;
  })
  .on("acme", "order.deleted", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, unknown>>(true);
  });

// A handler typed for a wider payload is accepted (it handles more than it is given); a narrower one is not.
const anyStripe = (ctx: { event: { payload: Stripe.Event } }) => void ctx.event.payload.id;
new Handlers().on("stripe", "invoice.paid", anyStripe);
const onlyCharges = (ctx: { event: { payload: Stripe.ChargeRefundedEvent } }) => void ctx.event.payload.id;
// @ts-expect-error an invoice.paid event is not a charge.refunded event
new Handlers().on("stripe", "invoice.paid", onlyCharges);

// The source map of a configuration's `sources`.
const sources = [
  { name: "stripe-eu", provider: "stripe", secrets: [env("STRIPE_EU_SECRET")] },
  { name: "gh", provider: "github", secrets: [env("GITHUB_WEBHOOK_SECRET")] },
] as const;
type Providers = SourceProviders<typeof sources>;
expectType<Equal<Providers, { "stripe-eu": "stripe"; gh: "github" }>>(true);
expectType<Equal<PayloadOf<Providers, "gh", "push">, PushEvent>>(true);
const typed = new Handlers<Providers>().on("gh", "push", (ctx) => void ctx.event.payload.after);

// defineConfig keeps accepting handlers, typed or not.
const config: HookledgerConfig = defineConfig({ sources, handlers: typed });
defineConfig({
  sources: [{ name: "stripe", provider: "stripe", secrets: [env("STRIPE_WEBHOOK_SECRET")] }],
  handlers: new Handlers().on("stripe", "invoice.paid", (ctx) => void ctx.event.payload.data.object.id),
});
void config;

// Payload maps for the configuration's sources whose provider has no typed SDK.
const withAcme = [
  { name: "acme", provider: "generic", secrets: [env("ACME_SECRET")] },
  { name: "stripe", provider: "stripe", secrets: [env("STRIPE_WEBHOOK_SECRET")] },
] as const;
new Handlers<SourceProviders<typeof withAcme, { acme: AcmeEvents }>>()
  .on("acme", "order.created", (ctx) => {
    const total: number = ctx.event.payload.total;
    return void total;
  })
  .on("stripe", "invoice.paid", (ctx) => {
    // @ts-expect-error an invoice.paid payload is Stripe's, not acme's
    ctx.event.payload.total;
  });

// createHookledger infers the source map from its `sources` (a const type parameter: no `as const` needed).
const hl = createHookledger({
  connectionString: "postgres://localhost/app",
  sources: [
    { name: "stripe-eu", provider: "stripe", secrets: ["whsec_x"] },
    { name: "gh", provider: "github", secrets: ["s"] },
  ],
});
hl.on("stripe-eu", "invoice.paid", (ctx) => {
  const paid: number = ctx.event.payload.data.object.amount_paid;
  return void paid;
})
  .on("gh", "issues.opened", (ctx) => {
    expectType<Equal<typeof ctx.event.payload, IssuesOpenedEvent>>(true);
  })
  .on("stripe-eu", "customer.subscription.updated", (ctx) => {
    // @ts-expect-error a subscription has no amount_paid
    ctx.event.payload.data.object.amount_paid;
  });
