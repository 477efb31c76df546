import { randomUUID } from "node:crypto";
import { type DeliverySigner, idHeaderOf, type SignedDelivery, signDelivery } from "./sign.js";

/**
 * One event the simulated provider delivers: its body, and its id and type where the provider sends them in
 * headers (a fixed random id is chosen when unset, so every copy and retry of the event carries the same one).
 *
 * @example
 * const event: SimulatedEvent = { body: { id: "evt_1", type: "invoice.paid", created: 1767225600 } };
 */
export interface SimulatedEvent {
  readonly body: string | Uint8Array | object;
  readonly id?: string;
  readonly type?: string;
}

/** A fetch-style handler, e.g. `createFetchHandler(receiver)`. */
export type FetchTarget = (request: Request) => Promise<Response>;

/**
 * What to deliver, where, and how badly.
 *
 * @example
 * const options: SimulateOptions = {
 *   events: [{ body: { id: "evt_1", type: "invoice.paid", created: 1767225600 } }],
 *   target: "http://127.0.0.1:3000/webhooks/stripe",
 *   sign: { provider: "stripe", secret: "whsec_test" },
 *   duplicates: { rate: 0.5, copies: 2 },
 * };
 */
export interface SimulateOptions {
  readonly events: readonly SimulatedEvent[];
  /**
   * The webhook URL (`…/webhooks/NAME`), or a fetch handler (such as `createFetchHandler(receiver)`) called with a
   * `Request` to `http://simulator.test/webhooks/{source}`.
   */
  readonly target: string | FetchTarget;
  /**
   * The source name in the path of a fetch-handler target's requests.
   * @defaultValue the signer's provider (`"stripe"` for `sign: { provider: "stripe", … }`)
   */
  readonly source?: string;
  /**
   * How to sign: a signer (the source's provider and a secret) or a function; called once per attempt, so every
   * retry carries a fresh signature.
   */
  readonly sign: DeliverySigner | ((event: SimulatedEvent, attempt: number) => SignedDelivery);
  /**
   * Which events are delivered more than once: each with probability `rate` gets `copies` extra deliveries.
   * @defaultValue { rate: 0.2, copies: 1 }
   */
  readonly duplicates?: { readonly rate?: number; readonly copies?: number };
  /** Deliver in a shuffled order (seeded), rather than as listed. @defaultValue true */
  readonly shuffle?: boolean;
  /** Seed of the duplicate choice and the shuffle: the same seed, the same run. @defaultValue 1 */
  readonly seed?: number;
  /** Deliveries in flight at once. @defaultValue 4 */
  readonly concurrency?: number;
  /**
   * Non-2xx answers and network errors are retried after `baseDelayMs * 2^(attempt-1)`, at most `maxDelayMs`,
   * until a 2xx or `maxAttempts` attempts per delivery.
   * @defaultValue { maxAttempts: 5, baseDelayMs: 20, maxDelayMs: 1000 }
   */
  readonly retry?: {
    readonly maxAttempts?: number;
    readonly baseDelayMs?: number;
    readonly maxDelayMs?: number;
  };
}

/**
 * What the simulated provider saw.
 *
 * @example
 * const report = await simulateProvider(options);
 * if (report.undelivered.length > 0) console.log("never acknowledged:", report.undelivered);
 */
export interface SimulationReport {
  /** Events that got at least one 2xx. */
  readonly delivered: number;
  /** Every POST, retries and duplicates included. */
  readonly attempts: number;
  /** Extra copies sent beyond one per event. */
  readonly duplicatesSent: number;
  /** How many answers had each status; network errors count under 0. */
  readonly statuses: Readonly<Record<number, number>>;
  /** Index into `events` of each delivery, in the order they started. */
  readonly order: readonly number[];
  /** Events that never got a 2xx, with the last status of their last delivery. */
  readonly undelivered: readonly { readonly index: number; readonly lastStatus: number }[];
}

/**
 * Delivers events the way real providers do: at least once, out of order, concurrently, retrying non-2xx answers
 * with exponential backoff and a fresh signature per attempt (docs/testing.md).
 *
 * @example
 * import { simulateProvider } from "hookledger/testing";
 *
 * const report = await simulateProvider({
 *   events: Array.from({ length: 50 }, (_, i) => ({
 *     body: { id: `evt_${i}`, object: "event", type: "invoice.paid", created: 1767225600 + i, data: { object: {} } },
 *   })),
 *   target: "http://127.0.0.1:3000/webhooks/stripe",
 *   sign: { provider: "stripe", secret: "whsec_test_secret" },
 *   duplicates: { rate: 0.3, copies: 2 },
 *   seed: 42,
 * });
 * console.log(report.delivered, report.duplicatesSent, report.statuses);
 */
export async function simulateProvider(options: SimulateOptions): Promise<SimulationReport> {
  const random = seededRandom(options.seed ?? 1);
  const { sign } = options;
  const events =
    typeof sign === "function" || options.events.every((e) => e.id !== undefined) || !idHeaderOf(sign)
      ? options.events
      : options.events.map((e) => (e.id === undefined ? { ...e, id: randomUUID() } : e));
  const rate = options.duplicates?.rate ?? 0.2;
  const copies = options.duplicates?.copies ?? 1;
  const queue: number[] = [];
  for (const index of events.keys()) {
    queue.push(index);
    if (random() < rate) for (let c = 0; c < copies; c++) queue.push(index);
  }
  if (options.shuffle ?? true) {
    for (let i = queue.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [queue[i], queue[j]] = [queue[j] as number, queue[i] as number];
    }
  }
  const signer = typeof sign === "function" ? sign : (e: SimulatedEvent) => signDelivery({ ...sign, ...e });
  const source = options.source ?? (typeof options.sign === "function" ? undefined : options.sign.provider);
  const post = poster(options.target, `http://simulator.test/webhooks/${source ?? ""}`);
  const retry = { maxAttempts: 5, baseDelayMs: 20, maxDelayMs: 1000, ...options.retry };
  const statuses: Record<number, number> = {};
  const acknowledged = new Set<number>();
  const lastStatus = new Map<number, number>();
  const order: number[] = [];
  let attempts = 0;

  const deliver = async (index: number) => {
    const event = events[index] as SimulatedEvent;
    for (let attempt = 1; attempt <= retry.maxAttempts; attempt++) {
      attempts++;
      const status = await post(signer(event, attempt));
      statuses[status] = (statuses[status] ?? 0) + 1;
      lastStatus.set(index, status);
      if (status >= 200 && status < 300) {
        acknowledged.add(index);
        return;
      }
      if (attempt < retry.maxAttempts) {
        const delay = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };
  let next = 0;
  const lane = async () => {
    while (next < queue.length) {
      const index = queue[next++] as number;
      order.push(index);
      await deliver(index);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, lane));
  return {
    delivered: acknowledged.size,
    attempts,
    duplicatesSent: queue.length - events.length,
    statuses,
    order,
    undelivered: [...events.keys()]
      .filter((index) => !acknowledged.has(index))
      .map((index) => ({ index, lastStatus: lastStatus.get(index) ?? 0 })),
  };
}

function poster(
  target: string | FetchTarget,
  handlerUrl: string,
): (delivery: SignedDelivery) => Promise<number> {
  return async ({ headers, body }) => {
    const init = { method: "POST", headers, body };
    try {
      const response =
        typeof target === "string" ? await fetch(target, init) : await target(new Request(handlerUrl, init));
      // Drain the body so keep-alive connections are reused.
      await response.arrayBuffer().catch(() => undefined);
      return response.status;
    } catch {
      return 0;
    }
  };
}

/**
 * A small seeded generator of numbers in [0, 1) (mulberry32): the same seed, the same sequence, so a failing run
 * of a simulation or a fuzz test can be repeated with its seed.
 *
 * @example
 * const random = seededRandom(42);
 * const pick = Math.floor(random() * 10);
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
