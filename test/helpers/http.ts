import type { AddressInfo } from "node:net";
import { type ClientRequest, createServer, type IncomingHttpHeaders, request } from "node:http";
import { sign } from "@octokit/webhooks-methods";
import Stripe from "stripe";
import { createReceiver, type Receiver, type ReceiverOptions } from "hookledger";
import { createNodeHandler } from "hookledger";
import type { LedgerContext, Queryable } from "../../src/ledger/context.js";
import { silentLogger } from "hookledger";
import { githubProvider } from "hookledger";
import { stripeProvider } from "hookledger";

/** The receiver's clock is pinned, so timestamps 301 s off stay 301 s off however slow the machine is. */
export const NOW_S = Math.floor(Date.now() / 1000);
export const STRIPE_SECRETS = ["whsec_test_a", "whsec_test_b"] as const;
export const GITHUB_SECRET = "github-secret-test";
export const STRIPE_CAP = 4096;

const stripe = new Stripe("sk_test_x");

/** A receiver with the two sources of the HTTP contract tests: stripe (cap 4096 bytes) and github. */
export function testReceiver(
  db: Queryable,
  ledger: LedgerContext,
  options: Partial<Pick<ReceiverOptions, "claimDeadlineMs">> = {},
): Receiver {
  return createReceiver({
    sources: [
      { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
      { name: "github", provider: githubProvider(), secrets: [GITHUB_SECRET], maxBodyBytes: 1_048_576 },
    ],
    db,
    ledger,
    log: silentLogger(),
    now: () => NOW_S * 1000,
    ...options,
  });
}

/** A Stripe event body, pretty-printed with non-ASCII text so byte-exact storage is actually tested. */
export function stripeBody(id: string, extra: Record<string, unknown> = {}): string {
  const event = {
    id,
    object: "event",
    type: "customer.subscription.updated",
    created: NOW_S - 5,
    data: { object: { id: `sub_${id}`, object: "subscription", status: "active", note: "café ☃ \u00e9" } },
    ...extra,
  };
  return `${JSON.stringify(event, null, 2)}\n`;
}

/** `Stripe-Signature` from stripe's own library. */
export function stripeSignature(
  payload: string,
  secret: string = STRIPE_SECRETS[0],
  timestamp = NOW_S,
): string {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

/** Headers of a Stripe delivery as Stripe sends them. */
export function stripeHeaders(payload: string, secret?: string, timestamp?: number): Record<string, string> {
  return {
    "content-type": "application/json",
    "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
    "stripe-signature": stripeSignature(payload, secret, timestamp),
  };
}

/** A node:http server around the receiver; `close` ends every connection. */
export async function serve(receiver: Receiver): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(createNodeHandler(receiver));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A response as received. */
export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly raw: Buffer;
  readonly text: string;
  /** Milliseconds from the request's start to the end of the response. */
  readonly ms: number;
}

/**
 * Opens a request on a connection of its own (a separate client) and leaves writing the body to the caller.
 * `reply` settles when the response has been read, whether or not the request body was finished.
 */
export function open(
  url: string,
  options: { method?: string; headers?: Record<string, string | number> } = {},
): { req: ClientRequest; reply: Promise<Reply> } {
  const started = performance.now();
  const req = request(url, {
    method: options.method ?? "POST",
    headers: options.headers ?? {},
    agent: false,
  });
  const reply = new Promise<Reply>((resolve, reject) => {
    // Once the response is in, a reset of the unfinished upload (413) is expected and no longer an error.
    req.on("error", reject);
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("error", reject);
      res.on("end", () => {
        const raw = Buffer.concat(chunks);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          raw,
          text: raw.toString("utf8"),
          ms: performance.now() - started,
        });
      });
    });
  });
  return { req, reply };
}

/** Sends one whole request on a connection of its own. */
export function send(
  url: string,
  options: { method?: string; headers?: Record<string, string | number>; body?: string | Buffer } = {},
): Promise<Reply> {
  const { req, reply } = open(url, options);
  req.end(options.body);
  return reply;
}

/**
 * A Stripe delivery of `payload` to `url`, signed again `ageS` seconds ago as a provider signs each retry.
 *
 * @example
 * const reply = await postStripe(`${server.url}/webhooks/stripe`, stripeBody("evt_1"));
 */
export function postStripe(url: string, payload: string, ageS = 0): Promise<Reply> {
  return send(url, { headers: stripeHeaders(payload, STRIPE_SECRETS[0], NOW_S - ageS), body: payload });
}

/** Rows for one event: in `events` (by source, or in any source) and its duplicate count. */
export async function ledgerCounts(
  db: Queryable,
  ledger: LedgerContext,
  dedupeKey: string,
  source?: string,
): Promise<{ events: number; duplicates: number }> {
  const { rows } = await db.query<{ events: number; duplicates: number }>(
    `select
       (select count(*)::int from ${ledger.s}.events
         where dedupe_key = $1::text and ($2::text is null or source = $2::text)) as events,
       (select coalesce(sum(count), 0)::int from ${ledger.s}.duplicates
         where dedupe_key = $1::text and ($2::text is null or source = $2::text)) as duplicates`,
    [dedupeKey, source ?? null],
  );
  const row = rows[0];
  if (!row) throw new Error("count query returned no row");
  return row;
}

/**
 * POSTs a signed Stripe event's headers declaring a 10 MB body and sends none: only a server that decides the 413
 * from Content-Length, before reading, ever answers.
 */
export async function postDeclaredTooLarge(url: string, id: string): Promise<Reply> {
  const { req, reply } = open(url, {
    headers: { ...stripeHeaders(stripeBody(id)), "content-length": 10_000_000 },
  });
  req.flushHeaders();
  const answer = await reply;
  req.destroy();
  return answer;
}

/** POSTs chunked, 3 KB then 3 KB more, never ending: the 413 must come at the byte that crosses a 4 KB cap. */
export async function postChunkedPastCap(url: string, id: string): Promise<Reply> {
  const { req, reply } = open(url, {
    headers: { ...stripeHeaders(stripeBody(id)), "transfer-encoding": "chunked" },
  });
  req.write(Buffer.alloc(3 * 1024, "a"));
  req.write(Buffer.alloc(3 * 1024, "b"));
  const answer = await reply;
  req.destroy();
  return answer;
}

/** Headers of a GitHub delivery as GitHub sends them, signed with octokit's own `sign`. */
export async function githubHeaders(
  payload: string,
  delivery: string,
  event: string,
  secret: string = GITHUB_SECRET,
): Promise<Record<string, string>> {
  return {
    "content-type": "application/json",
    "x-github-delivery": delivery,
    "x-github-event": event,
    "x-hub-signature-256": await sign(secret, payload),
  };
}
