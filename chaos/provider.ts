import { type SimulatedEvent, type SimulationReport, simulateProvider } from "hookledger/testing";
import { SECRET, SOURCE } from "./app-config.js";
import type { Answer } from "./failover.js";

/** What the suite meant to deliver: one Stripe event per entry, the oracle's list of what was sent. */
export interface SentEvent {
  readonly id: string;
  readonly entity: string;
  readonly version: number;
}

/** Stripe's `created` of version 0: the entity version is `created`, in seconds. */
const BASE = 1_767_225_600;

/** `count` events over `count / 5` entities, versions drawn from 4 values so equal versions are common. */
export function makeEvents(count: number, random: () => number): SentEvent[] {
  const entities = Math.max(1, Math.ceil(count / 5));
  return Array.from({ length: count }, (_, i) => ({
    id: `evt_${i}`,
    entity: `sub_${i % entities}`,
    version: BASE + Math.floor(random() * 4),
  }));
}

/** An event of entity `sub_0` older than any other: sent after everything settled, it must settle stale. */
export function lateStaleEvent(): SentEvent {
  return { id: "evt_late", entity: "sub_0", version: BASE - 1 };
}

function toSimulated(e: SentEvent): SimulatedEvent {
  return {
    body: {
      id: e.id,
      object: "event",
      type: "customer.subscription.updated",
      created: e.version,
      data: { object: { object: "subscription", id: e.entity, status: "active" } },
    },
  };
}

export interface DeliverOptions {
  readonly events: readonly SentEvent[];
  /** The receivers' webhook base URLs (`…/webhooks/`), read at each POST: a restarted receiver keeps its URL. */
  readonly receivers: () => readonly string[];
  readonly seed: number;
  readonly concurrency: number;
  /** At most this many POSTs a second (unset: as fast as the receivers answer), so faults meet deliveries. */
  readonly postsPerSecond?: number;
  /** Hears each answer the provider acts on. */
  readonly onAnswer?: (answer: Answer) => void;
}

/**
 * The simulated provider: every event at least once (a quarter of them 2 more times), shuffled, `concurrency`
 * POSTs in flight, spread round-robin over the receivers; one POST in ten goes to two receivers at once
 * (concurrent copies). Any non-2xx or refused connection is retried, re-signed, until a 2xx.
 */
export function deliver(options: DeliverOptions): Promise<SimulationReport> {
  let turn = 0;
  let posts = 0;
  const start = Date.now();
  let coin = options.seed;
  const post = async (base: string, request: Request, body: ArrayBuffer) => {
    try {
      const response = await fetch(`${base}${SOURCE}`, {
        method: "POST",
        headers: request.headers,
        body,
        signal: AbortSignal.timeout(10_000),
      });
      const text = await response.text();
      return { status: response.status, accepted: response.ok && text.includes('"accepted"') };
    } catch {
      return { status: 0, accepted: false };
    }
  };
  return simulateProvider({
    events: options.events.map(toSimulated),
    source: SOURCE,
    sign: { provider: "stripe", secret: SECRET },
    duplicates: { rate: 0.25, copies: 2 },
    shuffle: true,
    seed: options.seed,
    concurrency: options.concurrency,
    retry: { maxAttempts: 100_000, baseDelayMs: 25, maxDelayMs: 500 },
    target: async (request) => {
      if (options.postsPerSecond) {
        const slot = start + (posts++ * 1000) / options.postsPerSecond;
        if (slot > Date.now()) await new Promise((r) => setTimeout(r, slot - Date.now()));
      }
      const receivers = options.receivers();
      const body = await request.arrayBuffer();
      const sentAt = Date.now();
      const first = receivers[turn++ % receivers.length] as string;
      coin = (coin * 1_103_515_245 + 12_345) % 2_147_483_648;
      const answers =
        coin % 10 === 0 && receivers.length > 1
          ? await Promise.all([
              post(first, request, body),
              post(receivers[turn % receivers.length] as string, request, body),
            ])
          : [await post(first, request, body)];
      const status =
        answers.find((a) => a.status >= 200 && a.status < 300)?.status ??
        Math.max(...answers.map((a) => a.status));
      if (options.onAnswer) {
        const { id } = JSON.parse(new TextDecoder().decode(body)) as { id: string };
        const accepted = answers.some((a) => a.accepted);
        options.onAnswer({ id, status, accepted, sentAt, answeredAt: Date.now() });
      }
      // No answer at all (a receiver killed mid-request): the simulator counts it as a network error (0).
      if (status === 0) throw new Error("no answer");
      return new Response(null, { status });
    },
  });
}
