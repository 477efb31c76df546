// Type-only: nothing here exists at run time. Stripe's and GitHub's payloads come from their own packages
// (`stripe`, `@octokit/webhooks-types`), imported with `import type` so that `import "hookledger"` loads neither.
// A project without one of them still compiles, even without `skipLibCheck` (scripts/optional-types.mjs marks
// these imports in the built declarations), and that provider's payloads are then `unknown` (see `Known` below).
import type { EventPayloadMap } from "@octokit/webhooks-types";
import type Stripe from "stripe";
import type { ProviderName } from "../config/types.js";

/**
 * Terminology of the typed handlers:
 * - **source map**: which provider (or which payloads) each source name has, the type argument of `Handlers`:
 *   `{ "stripe-eu": "stripe" }`. A source named after a provider (`"stripe"`, `"github"`, …) needs no entry.
 * - **payload map**: a source's event types and their payloads, for providers without an SDK that describes them:
 *   `{ acme: { "order.created": AcmeOrder } }`.
 *
 * @example
 * const handlers = new Handlers<{ "stripe-eu": "stripe"; acme: { "order.created": { id: string } } }>();
 */
export type SourceMap = { readonly [source: string]: ProviderName | PayloadMap };

/**
 * Event types and their payloads, declared by the application for a source whose provider has no typed SDK.
 *
 * @example
 * type AcmeEvents = { "order.created": { id: string; total: number } };
 * new Handlers<{ acme: AcmeEvents }>().on("acme", "order.created", (ctx) => ctx.event.payload.total);
 */
export type PayloadMap = { readonly [type: string]: unknown };

/**
 * The source map of a `sources` array, for a typed facade over a configuration: each source name maps to its
 * provider, or to the payload map given for it in `Payloads` (for sources whose provider has no typed SDK). The
 * array must keep its literal types (`as const`, or a `const` type parameter).
 *
 * @example
 * const sources = [
 *   { name: "stripe-eu", provider: "stripe", secrets: [env("STRIPE_EU_SECRET")] },
 *   { name: "acme", provider: "generic", secrets: [env("ACME_SECRET")] },
 * ] as const;
 * const handlers = new Handlers<SourceProviders<typeof sources, { acme: { "order.created": { id: string } } }>>()
 *   .on("stripe-eu", "invoice.paid", (ctx) => console.log(ctx.event.payload.data.object.amount_paid))
 *   .on("acme", "order.created", (ctx) => console.log(ctx.event.payload.id));
 */
export type SourceProviders<
  S extends readonly { readonly name: string; readonly provider: ProviderName }[],
  // biome-ignore lint/complexity/noBannedTypes: no payload maps
  Payloads extends { readonly [source: string]: PayloadMap } = {},
> = {
  [E in S[number] as E["name"]]: E["name"] extends keyof Payloads ? Payloads[E["name"]] : E["provider"];
};

/**
 * A Paddle Billing notification (developer.paddle.com, "Webhooks"): the envelope is typed, `data` (the entity,
 * snake_case as Paddle sends it) is not; the Node SDK's types describe its camelCased rendering, not this body.
 *
 * @example
 * const envelope: PaddleNotification = { event_id: "evt_01", event_type: "subscription.updated",
 *   occurred_at: "2024-04-12T10:18:49.621022Z", notification_id: "ntf_01", data: { id: "sub_01" } };
 */
export interface PaddleNotification<T extends string = string> {
  readonly event_id: string;
  readonly event_type: T;
  readonly occurred_at: string;
  readonly notification_id: string;
  readonly data: { readonly id?: string; readonly [field: string]: unknown };
}

/**
 * A Standard Webhooks payload (standardwebhooks.com, "Payload structure"): `type`, `timestamp` and `data`.
 *
 * @example
 * const body: StandardWebhookPayload = { type: "invoice.paid", timestamp: "2024-04-12T10:18:49Z", data: {} };
 */
export interface StandardWebhookPayload<T extends string = string> {
  readonly type: T;
  readonly timestamp: string;
  readonly data: { readonly [field: string]: unknown };
}

// A type from a package that is not installed is an error type under `skipLibCheck`: it acts as `any`, and the
// usual test (`0 extends 1 & T`) returns it unchanged. A distributive conditional tells it apart: only `any`
// (error or not) takes both branches.
type IsAny<T> = boolean extends (T extends never ? true : false) ? true : false;
/** An SDK type that failed to resolve (package not installed, `skipLibCheck`) is `any`: make it `unknown`. */
type Known<T> = IsAny<T> extends true ? unknown : T;

type StripeEvent = Known<Stripe.Event>;
type StripeType = StripeEvent extends { type: infer T extends string } ? T : never;

type GithubName = keyof EventPayloadMap & string;
type ActionOf<E> = E extends { action: infer A extends string } ? A : never;
/** `push`, `issues`, and `issues.opened`: hookledger appends `.action` when the body has one. */
type GithubType = { [N in GithubName]: N | `${N}.${ActionOf<EventPayloadMap[N]>}` }[GithubName];
type GithubPayload<T extends string> = T extends `${infer N}.${infer A}`
  ? N extends GithubName
    ? Extract<EventPayloadMap[N], { action: A }>
    : never
  : T extends GithubName
    ? EventPayloadMap[T]
    : never;

/** The event types a provider's SDK knows (for completion); others are accepted with an `unknown` payload. */
export type ProviderEventType<P> = P extends "stripe"
  ? StripeType
  : P extends "github"
    ? IsAny<EventPayloadMap> extends true
      ? never
      : GithubType
    : P extends ProviderName
      ? never
      : P extends PayloadMap
        ? keyof P & string
        : never;

type OrUnknown<T> = [T] extends [never] ? unknown : T;

/** The payload of events of `type` from a source of provider (or payload map) `P`. `"*"`: all of them. */
export type ProviderPayload<P, T extends string> = P extends "stripe"
  ? T extends "*"
    ? StripeEvent
    : OrUnknown<Extract<StripeEvent, { type: T }>>
  : P extends "github"
    ? IsAny<EventPayloadMap> extends true
      ? unknown
      : T extends "*"
        ? EventPayloadMap[GithubName]
        : OrUnknown<GithubPayload<T>>
    : P extends "paddle"
      ? PaddleNotification<T extends "*" ? string : T>
      : P extends "standard"
        ? StandardWebhookPayload<T extends "*" ? string : T>
        : P extends ProviderName
          ? unknown
          : P extends PayloadMap
            ? T extends keyof P
              ? P[T]
              : unknown
            : unknown;

/**
 * The provider (or payload map) of `source`: the map's entry, else the provider the source is named after. A map
 * of `any` (the default of `Handlers`) is the empty map.
 */
export type ProviderOf<M extends SourceMap, S extends string> =
  IsAny<M> extends true ? NamedAfter<S> : S extends keyof M ? M[S] : NamedAfter<S>;
type NamedAfter<S extends string> = S extends ProviderName ? S : unknown;

/** The payload a handler of `source`/`type` receives under source map `M`. */
export type PayloadOf<M extends SourceMap, S extends string, T extends string> = ProviderPayload<
  ProviderOf<M, S>,
  T
>;

/**
 * The event types `on` suggests for `source` under source map `M` (the SDK's, or the payload map's, and `"*"`);
 * any other string is accepted too, with an `unknown` payload.
 *
 * @example
 * type StripeTypes = SourceEventType<{ "stripe-eu": "stripe" }, "stripe-eu">; // "invoice.paid" | … | "*"
 */
export type SourceEventType<M extends SourceMap, S extends string> =
  | ProviderEventType<ProviderOf<M, S>>
  | "*";
