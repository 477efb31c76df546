/**
 * The one interface every provider implements.
 *
 * Terminology (docs/architecture.md §1):
 * - **source**: one configured inbound endpoint (`stripe`, `github-acme`): a provider, its secrets, its options.
 * - **provider**: a signature scheme plus the rules for the event id, type, time and entity.
 * - **delivery**: one HTTP POST. **event**: what the provider means; several deliveries may carry one event.
 * - **dedupe key**: the provider's stable id for the event.
 * - **entity / version**: the business object an event describes and its monotonic version.
 *
 * @module
 */

/** Read-only view of request headers; Web `Headers` satisfies it, and so does the node adapter's wrapper. */
export interface HeaderBag {
  /** Case-insensitive lookup; `null` when the header is absent. */
  get(name: string): string | null;
  /** Visits every header (names lower-case). */
  forEach(callback: (value: string, name: string) => void): void;
}

/**
 * Why a delivery was refused. `unauthorized` reasons all answer the same uniform 401; `malformed` reasons answer
 * 400 and name the problem.
 *
 * @example
 * const r = stripe.verify(input);
 * if (!r.ok && r.reason === "timestamp_outside_window") metrics.windowRejects.inc();
 */
export type VerifyFailureReason =
  | "signature_missing"
  | "signature_malformed"
  | "signature_mismatch"
  | "timestamp_missing"
  | "timestamp_outside_window";

/**
 * A verified delivery that cannot become an event: answered 400 with `detail`. `body_too_deep`: the JSON nests
 * deeper than 512 levels (docs/architecture.md §4).
 */
export type ParseFailureReason =
  | "body_not_json"
  | "body_too_deep"
  | "event_id_missing"
  | "event_type_missing";

/** The business object an event describes and its monotonic version (seconds, milliseconds or a counter). */
export interface EntityRef {
  /** For example `"subscription"`. */
  readonly type: string;
  /** For example `"sub_123"`. */
  readonly id: string;
  /** Larger is newer. Compared as a Postgres `numeric`. */
  readonly version: number;
}

/** What a provider extracts from a verified delivery. */
export interface ParsedEvent {
  /** The provider's stable id for the event: the ledger's dedupe key. */
  readonly dedupeKey: string;
  /** The provider's event type, e.g. `payment_intent.succeeded` or `pull_request.opened`. */
  readonly type: string;
  /** The parsed JSON body. */
  readonly payload: unknown;
  /**
   * True when `payload` is the whole body parsed as JSON from UTF-8 text, as every built-in provider's JSON
   * deliveries are. The batched claim then lets Postgres read the stored payload from the body's bytes instead of
   * serialising `payload` again (docs/architecture.md, "The payload is read from the body"). Leave it unset when the
   * payload is anything else (a form's fields, an inner document, an object built in code).
   * @defaultValue false
   */
  readonly payloadIsBody?: boolean;
  /** When the provider says the event happened, if it says. */
  readonly occurredAt?: Date;
  /** The entity and version for the default version guard, if the provider can tell. */
  readonly entity?: EntityRef;
  /**
   * True when the dedupe key is not covered by the signature (GitHub's `X-GitHub-Delivery`): the body's sha256 then
   * dedupes too, so a captured body re-sent under a new id header is still a duplicate (docs/architecture.md §3).
   */
  readonly dedupeOnBodyHash: boolean;
  /**
   * The 200 to send instead of `{"status":"accepted"|"duplicate","id":…}`, for providers that show the response
   * body to a person (Slack slash commands and interactivity display it in the channel).
   */
  readonly acknowledge?: ProviderReply;
}

/** Everything a provider needs to verify one delivery; it never touches the network or the database. */
export interface VerifyInput {
  /** The raw request body, byte-exact. */
  readonly body: Uint8Array;
  readonly headers: HeaderBag;
  /** Every active secret for the source; any may match (rotation). */
  readonly secrets: readonly string[];
  /** The current time in milliseconds since the epoch. */
  readonly now: number;
}

/**
 * A verified request that is not an event but a handshake the provider expects an answer to (Slack's
 * `url_verification`): answered 200 with this body, and nothing is written.
 */
export interface ProviderReply {
  readonly status: 200;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The outcome of {@link Provider.verify}: a value, never an exception, for every kind of bad input. */
export type VerifyResult =
  | { readonly ok: true; readonly secretIndex: number; readonly event: ParsedEvent }
  | { readonly ok: true; readonly secretIndex: number; readonly reply: ProviderReply }
  | { readonly ok: false; readonly reason: VerifyFailureReason }
  | { readonly ok: false; readonly reason: ParseFailureReason; readonly detail: string };

/**
 * The outcome of {@link VerifySteps.authenticate}: the secret that matched, or why the delivery is refused.
 *
 * @example
 * const checked = stripeProvider().steps?.authenticate(input);
 * if (checked?.ok) console.log("matched secret", checked.secretIndex);
 */
export type AuthenticateResult =
  | { readonly ok: true; readonly secretIndex: number }
  | { readonly ok: false; readonly reason: VerifyFailureReason };

/**
 * {@link Provider.verify} in its two steps, for a provider whose whole event comes from the signed body, so that
 * equal bytes always make an equal event (Stripe, Paddle: id, type and time are body fields). `verify(input)` is
 * exactly `authenticate(input)` and then `parse(input.body)`; neither ever makes a reply or an `acknowledge`. The
 * receiver uses the steps to answer a body it has already answered as a duplicate without parsing it again
 * (docs/architecture.md, "Duplicates are counted in their own table").
 *
 * @example
 * const steps: VerifySteps | undefined = stripeProvider().steps;
 */
export interface VerifySteps {
  /** The signature and time checks of `verify`, nothing else. */
  authenticate(input: VerifyInput): AuthenticateResult;
  /** The rest of `verify`, after `authenticate` passed: the event, or why the body cannot be one. */
  parse(body: Uint8Array): ParseResult;
}

/**
 * The outcome of {@link Provider.parse}: the event, or why the body cannot be one.
 *
 * @example
 * const parsed = stripeProvider().parse?.(body, headers);
 * if (parsed?.ok) console.log(parsed.event.dedupeKey);
 */
export type ParseResult =
  | { readonly ok: true; readonly event: ParsedEvent }
  | { readonly ok: false; readonly reason: ParseFailureReason; readonly detail: string };

/**
 * A signature scheme plus the rules for the event id, type, time and entity.
 *
 * @example
 * const provider = stripeProvider({ toleranceSeconds: 300 });
 * const result = provider.verify({ body, headers: request.headers, secrets: ["whsec_..."], now: Date.now() });
 * if (result.ok) console.log(result.event.dedupeKey, "matched secret", result.secretIndex);
 */
export interface Provider {
  /** The provider's name, e.g. `"stripe"`. */
  readonly name: string;
  /** Verifies the signature over the raw bytes, then parses the event. Never throws on bad input. */
  verify(input: VerifyInput): VerifyResult;
  /**
   * Parses a body exactly as {@link Provider.verify} does after the signature matched, skipping only the signature.
   * Only the replay route calls it, after its own token check; providers without it do not accept replays.
   */
  parse?(body: Uint8Array, headers: HeaderBag): ParseResult;
  /** `verify` in two steps, for providers whose event comes from the signed body alone (see {@link VerifySteps}). */
  readonly steps?: VerifySteps;
}
