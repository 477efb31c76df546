import { type Fields, type FieldsOf, unknownFields } from "../config/fields.js";
import { delayAfter, type RetryPolicy } from "../worker/backoff.js";
import { RefusedAddressError } from "../outbound/address.js";
import { FORWARD_SENDER } from "../ledger/forward-write.js";
import { destinationUrl, postOnce, retryAfterMs } from "../outbound/http.js";

/**
 * A message as its sender gets it.
 *
 * @example
 * const message: OutboxMessage<{ to: string }> = { sender: "email", payload: { to: "a@example.com" }, source: "stripe", eventId: "evt_1", key: "#0", createdAt: new Date() };
 */
export interface OutboxMessage<P = unknown> {
  /** The sender's name, as given to `ctx.outbox.send`. */
  readonly sender: string;
  readonly payload: P;
  /** The event that wrote it: its source and id (`ctx.event.id`). */
  readonly source: string;
  readonly eventId: string;
  /** "#0", "#1", … in the order of the event's sends, or the key the handler gave. */
  readonly key: string;
  readonly createdAt: Date;
}

/**
 * What a sender gets besides the message: the idempotency key to pass downstream (the same for every attempt of
 * every process), the attempt's number, and a signal aborted at the timeout or when the process stops.
 *
 * @example
 * const call: SendCall = { idempotencyKey: "hl_…", attempt: 1, signal: AbortSignal.timeout(15_000) };
 */
export interface SendCall {
  readonly idempotencyKey: string;
  readonly attempt: number;
  readonly signal: AbortSignal;
}

/**
 * A function that delivers one message. Returning is success; throwing retries with backoff (a {@link SendError}
 * can ask for a delay or give up). It may run more than once for one message (a process killed after the remote
 * side acted): pass `call.idempotencyKey` downstream so the second call changes nothing.
 */
export type Sender<P = unknown> = (message: OutboxMessage<P>, call: SendCall) => Promise<unknown> | unknown;

/**
 * A send that failed in a way the sender knows more about: `retryAfterMs` (a destination's `Retry-After`), or
 * `permanent` (no retry can succeed: the message is dead at once). `status` is recorded with the error.
 *
 * @example
 * throw new SendError("mailbox full", { retryAfterMs: 60_000 });
 */
export class SendError extends Error {
  override readonly name = "SendError";
  readonly retryAfterMs: number | undefined;
  readonly permanent: boolean;
  readonly status: number | undefined;
  constructor(
    message: string,
    options: { retryAfterMs?: number; permanent?: boolean; status?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterMs = options.retryAfterMs;
    this.permanent = options.permanent ?? false;
    this.status = options.status;
  }
}

/**
 * Options of {@link httpSender}.
 *
 * @example
 * const options: HttpSenderOptions = { url: "https://crm.internal/hooks", headers: { authorization: "Bearer …" } };
 */
export interface HttpSenderOptions {
  /** An http:// or https:// URL; checked when the sender is made. */
  readonly url: string;
  /** Sent with every call (after `content-type` and before `idempotency-key`, which it cannot replace). */
  readonly headers?: Readonly<Record<string, string>>;
  /** @defaultValue 15000 */
  readonly timeoutMs?: number;
}

// A 408, 409 (Stripe: a request with this key is still in flight), 425 or 429 may succeed later, as may a 5xx;
// any other 4xx will not, whatever the retry: the message is dead at once, with the answer, for an operator.
const RETRIED_4XX = new Set([408, 409, 425, 429]);

async function postJson(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: unknown,
  call: SendCall,
  timeoutMs: number,
) {
  const answer = await postOnce({
    url,
    headers: { "content-type": "application/json", ...headers, "idempotency-key": call.idempotencyKey },
    body: JSON.stringify(body),
    timeoutMs,
    signal: call.signal,
  }).catch((error: Error) => {
    // The same address is refused on every attempt: no retry can succeed.
    if (error instanceof RefusedAddressError) throw new SendError(error.message, { permanent: true });
    throw error;
  });
  if (answer.status >= 200 && answer.status < 300) return { status: answer.status };
  const text = `HTTP ${answer.status}${answer.snippet ? `: ${answer.snippet.slice(0, 200)}` : ""}`;
  if (answer.status >= 300 && answer.status < 400) {
    throw new SendError(`${text} (redirects are not followed)`, { status: answer.status });
  }
  const wait = retryAfterMs(answer.headers["retry-after"]);
  throw new SendError(text, {
    status: answer.status,
    permanent: answer.status < 500 && !RETRIED_4XX.has(answer.status),
    ...(wait !== undefined && { retryAfterMs: wait }),
  });
}

/**
 * A sender that POSTs each message's payload as JSON to `url` with an `Idempotency-Key` header. 2xx is sent; 3xx
 * fails (redirects are not followed); 408, 409, 425, 429 and 5xx retry, honouring `Retry-After`; any other 4xx is
 * dead at once. Link-local and cloud metadata addresses are refused at connect time.
 *
 * @example
 * import { Outbox, httpSender } from "hookledger";
 *
 * const outbox = new Outbox().on("crm", httpSender({ url: "https://crm.internal/hooks" }));
 */
export function httpSender(options: HttpSenderOptions): Sender {
  refuseUnknown(options, HTTP_SENDER_FIELDS, "httpSender(options)");
  const url = destinationUrl(options.url, "httpSender url");
  const timeoutMs = options.timeoutMs ?? 15_000;
  return (message, call) => postJson(url, options.headers ?? {}, message.payload, call, timeoutMs);
}

/**
 * The payload of the built-in `http` sender: where to POST and what.
 *
 * @example
 * await ctx.outbox.send("http", { url: "https://crm.internal/hooks", body: { customer: "cus_1" } } satisfies HttpMessage);
 */
export interface HttpMessage {
  readonly url: string;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

const builtInHttp: Sender = (message, call) => {
  const m = message.payload as Partial<HttpMessage> | null;
  let url: URL;
  try {
    url = destinationUrl(m?.url, "the http message's url");
  } catch (error) {
    throw new SendError((error as Error).message, { permanent: true });
  }
  return postJson(url, m?.headers ?? {}, m?.body ?? null, call, 15_000);
};

/**
 * Options of {@link Outbox}: how its messages are sent.
 *
 * @example
 * const options: OutboxOptions = { concurrency: 32, retry: { maxAttempts: 20 } };
 */
export interface OutboxOptions {
  /**
   * Calls in flight at once in each worker process.
   * @defaultValue 16
   */
  readonly concurrency?: number;
  /**
   * A call running longer fails its attempt (its signal is aborted) and is retried.
   * @defaultValue 15000
   */
  readonly timeoutMs?: number;
  /**
   * Attempts before a message is dead, and the backoff between them (with jitter). A destination's
   * `Retry-After` (or a {@link SendError}'s `retryAfterMs`) lengthens one delay, up to an hour.
   * @defaultValue { maxAttempts: 15, baseDelayMs: 5000, maxDelayMs: 3_600_000 } (about 5 hours to dead)
   */
  readonly retry?: Partial<RetryPolicy>;
  /**
   * How often an idle worker looks for due messages without a wake-up (retries come due this way).
   * @defaultValue 1000
   */
  readonly pollIntervalMs?: number;
}

const HTTP_SENDER_FIELDS = {
  url: true,
  headers: true,
  timeoutMs: true,
} satisfies FieldsOf<HttpSenderOptions>;
const OUTBOX_FIELDS = {
  concurrency: true,
  timeoutMs: true,
  retry: { maxAttempts: true, baseDelayMs: true, maxDelayMs: true },
  pollIntervalMs: true,
} satisfies FieldsOf<OutboxOptions>;

// The same refusal as a config file's (src/config/fields.ts): a misspelt option would otherwise fall back to its
// default without a word.
function refuseUnknown(options: object, fields: Fields, at: string): void {
  const problems = unknownFields(options, fields, at);
  if (problems.length > 0) throw new TypeError(problems.join("; "));
}

/** The default outbox retry policy: 15 attempts, 5 s doubling up to 1 h. */
export const defaultOutboxRetry: RetryPolicy = { maxAttempts: 15, baseDelayMs: 5000, maxDelayMs: 3_600_000 };

/**
 * The senders of `ctx.outbox.send`, by name, and how their messages are sent. `http` is built in: its payload is
 * an {@link HttpMessage}. Give it to `createHookledger({ outbox })`, `startWorker({ outbox })` or a config file's
 * `outbox`; the processes that run the worker send.
 *
 * @example
 * import { Handlers, Outbox } from "hookledger";
 *
 * const outbox = new Outbox().on("email", async (message, { idempotencyKey }) => {
 *   await mailer.send({ ...(message.payload as object), messageId: `<${idempotencyKey}@example.com>` });
 * });
 * const handlers = new Handlers().on("stripe", "invoice.paid", async (ctx) => {
 *   await ctx.outbox.send("email", { to: "billing@example.com", invoice: ctx.event.id });
 * });
 */
export class Outbox {
  readonly #senders = new Map<string, Sender>([["http", builtInHttp]]);
  readonly options: Required<Omit<OutboxOptions, "retry">> & { readonly retry: RetryPolicy };

  constructor(options: OutboxOptions = {}) {
    refuseUnknown(options, OUTBOX_FIELDS, "new Outbox(options)");
    for (const field of ["timeoutMs", "pollIntervalMs"] as const) {
      const value = options[field];
      if (value !== undefined && !(typeof value === "number" && value > 0 && Number.isFinite(value))) {
        throw new RangeError(`outbox ${field} must be a positive number of milliseconds, got ${value}`);
      }
    }
    const concurrency = options.concurrency ?? 16;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new RangeError(`outbox concurrency must be a positive integer, got ${concurrency}`);
    }
    this.options = {
      concurrency,
      timeoutMs: options.timeoutMs ?? 15_000,
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      retry: { ...defaultOutboxRetry, ...options.retry },
    };
  }

  /**
   * Registers the sender of messages named `name`. One sender per name; registering twice, `http` (built in) or
   * `forward` (forward mode's) throws.
   *
   * @example
   * new Outbox().on("slack", async (message, { signal }) => { await fetch(url, { method: "POST", body: JSON.stringify(message.payload), signal }); });
   */
  on<P = unknown>(name: string, sender: Sender<P>): this {
    if (typeof sender !== "function")
      throw new TypeError(`outbox.on("${name}"): the sender must be a function`);
    if (this.#senders.has(name)) throw new Error(`an outbox sender named ${name} is already registered`);
    if (name === FORWARD_SENDER) {
      throw new Error(
        `the outbox sender name ${name} is reserved for forward mode (docs/forwarding.md); register yours under another name`,
      );
    }
    this.#senders.set(name, sender as Sender);
    return this;
  }

  /** The sender of `name`, or undefined. */
  find(name: string): Sender | undefined {
    return this.#senders.get(name);
  }

  /** Every sender's name, `http` included. */
  senders(): string[] {
    return [...this.#senders.keys()];
  }

  /**
   * The delay before the attempt after `attempt`: the backoff, or a destination's `Retry-After` when that is
   * longer, up to an hour (a server asking for a day would otherwise park the message past every alert).
   */
  delayAfter(attempt: number, retryAfter?: number): number {
    return delayAfter(this.options.retry, attempt, retryAfter);
  }
}
