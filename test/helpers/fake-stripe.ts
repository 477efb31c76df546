import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A Stripe Event as the fake lists it. */
export interface FakeEvent {
  readonly id: string;
  readonly object: "event";
  readonly type: string;
  readonly created: number;
  readonly api_version: string;
  readonly livemode: false;
  readonly pending_webhooks: number;
  readonly request: { id: null; idempotency_key: null };
  readonly data: { object: Record<string, unknown> };
}

/** A scripted failure: answered instead of the next request(s). */
export interface FakeFailure {
  readonly status: number;
  /** Sent as `Stripe-Should-Retry`. */
  readonly shouldRetry?: boolean;
}

/** A local fake of `GET /v1/events` for the official SDK. */
export interface FakeStripe {
  /** `http://127.0.0.1:PORT`, for `apiBase` / HOOKLEDGER_STRIPE_API_BASE. */
  readonly url: string;
  readonly apiKey: string;
  /** Newest first, as Stripe lists them. */
  readonly events: FakeEvent[];
  /** Answered (in order) before any list is served. */
  readonly failures: FakeFailure[];
  /** Every request's query, as received. */
  readonly requests: URLSearchParams[];
  close(): Promise<void>;
}

/**
 * An event `ageSeconds` old, of a subscription, as `GET /v1/events` renders it.
 *
 * @example
 * fakeEvent("evt_1", 60);
 */
export function fakeEvent(id: string, ageSeconds: number, type = "customer.subscription.updated"): FakeEvent {
  return {
    id,
    object: "event",
    type,
    created: Math.floor(Date.now() / 1000) - ageSeconds,
    api_version: "2024-06-20",
    livemode: false,
    pending_webhooks: 0,
    request: { id: null, idempotency_key: null },
    data: { object: { id: `sub_${id}`, object: "subscription", status: "active", note: "café ☃" } },
  };
}

/**
 * Starts the fake on 127.0.0.1:0 with `events` (any order; kept newest first). It checks the bearer key (401
 * otherwise), filters by `created[gte|lte]`, `type`, `types[]` and `delivery_success=false` (events with
 * `pending_webhooks > 0`), and pages with `limit`, `starting_after` and `has_more`.
 *
 * @example
 * const fake = await startFakeStripe([fakeEvent("evt_1", 60)]); after(() => fake.close());
 */
export async function startFakeStripe(events: FakeEvent[], apiKey = "sk_test_fake"): Promise<FakeStripe> {
  const sorted = [...events].sort((a, b) => b.created - a.created || (a.id < b.id ? 1 : -1));
  const failures: FakeFailure[] = [];
  const requests: URLSearchParams[] = [];
  const server = createServer((req, res) => handle(req, res));
  function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://fake");
    requests.push(url.searchParams);
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      return reply(401, { error: { type: "invalid_request_error", message: "Invalid API Key provided" } });
    }
    const failure = failures.shift();
    if (failure) {
      const type = failure.status === 429 ? "rate_limit_error" : "api_error";
      const headers: Record<string, string> =
        failure.shouldRetry === undefined ? {} : { "stripe-should-retry": String(failure.shouldRetry) };
      return reply(failure.status, { error: { type, message: `fake ${failure.status}` } }, headers);
    }
    if (req.method !== "GET" || url.pathname !== "/v1/events") {
      return reply(404, { error: { type: "invalid_request_error", message: "Unrecognized request URL" } });
    }
    const q = url.searchParams;
    const num = (name: string) => (q.has(name) ? Number(q.get(name)) : undefined);
    const gte = num("created[gte]");
    const lte = num("created[lte]");
    const types = [...q.entries()].filter(([k]) => k === "type" || k.startsWith("types[")).map(([, v]) => v);
    const matches = (type: string) =>
      types.length === 0 ||
      types.some((t) => (t.endsWith("*") ? type.startsWith(t.slice(0, -1)) : t === type));
    let list = sorted.filter(
      (e) =>
        (gte === undefined || e.created >= gte) &&
        (lte === undefined || e.created <= lte) &&
        matches(e.type) &&
        (q.get("delivery_success") !== "false" || e.pending_webhooks > 0),
    );
    const after = q.get("starting_after");
    if (after) list = list.slice(list.findIndex((e) => e.id === after) + 1);
    const limit = num("limit") ?? 10;
    reply(200, {
      object: "list",
      url: "/v1/events",
      has_more: list.length > limit,
      data: list.slice(0, limit),
    });
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    events: sorted,
    failures,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
