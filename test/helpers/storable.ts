// The bed of the "values the ledger cannot hold as they are" suites (docs/architecture.md §4): a receiver over
// node:http with stripe, shopify, paddle and github sources (1 MB caps, so nesting reaches the parser), signed
// deliveries from hookledger/testing, and the stored row of an answered event.
import assert from "node:assert/strict";
import { createLogger, createReceiver, githubProvider, type Pool, paddleProvider } from "hookledger";
import { shopifyProvider, stripeProvider } from "hookledger";
import { signDelivery } from "hookledger/testing";
import type { TestLedger } from "./db.js";
import { NOW_S, type Reply, send, serve } from "./http.js";

export const SECRET = "storable-secret";
export type StorableProvider = "stripe" | "shopify" | "paddle" | "github";

/** One logged line, parsed. */
export type LogLine = Record<string, unknown> & { level: number; msg: string };

/** A served receiver over the four sources, with its log lines kept. */
export interface StorableBed {
  readonly url: string;
  readonly logged: LogLine[];
  close(): Promise<void>;
}

/**
 * Serves a receiver on `ingest` with the clock pinned at `NOW_S`.
 *
 * @example
 * const bed = await storableBed(t, t.newPool("ingest"));
 */
export async function storableBed(t: TestLedger, ingest: Pool): Promise<StorableBed> {
  const logged: LogLine[] = [];
  const log = createLogger({ destination: { write: (line: string) => logged.push(JSON.parse(line)) } });
  const source = (name: StorableProvider, provider: ReturnType<typeof stripeProvider>) => ({
    name,
    provider,
    secrets: [SECRET],
    maxBodyBytes: 1_048_576,
  });
  const receiver = createReceiver({
    sources: [
      source("stripe", stripeProvider()),
      source("shopify", shopifyProvider()),
      source("paddle", paddleProvider()),
      source("github", githubProvider()),
    ],
    db: ingest,
    ledger: t.ledger,
    log,
    now: () => NOW_S * 1000,
  });
  const server = await serve(receiver);
  return { url: server.url, logged, close: () => server.close() };
}

/** A delivery to send: the raw JSON text (so escapes such as `\ud800` reach the parser as written). */
export interface Shipment {
  readonly provider: StorableProvider;
  readonly body: string;
  /** The id for providers that take it from a header (shopify, github). */
  readonly id?: string;
  /** The type for providers that take it from a header. */
  readonly type?: string;
  /** Headers set after signing (unsigned ones, such as `x-shopify-triggered-at`). */
  readonly unsigned?: Readonly<Record<string, string>>;
}

/**
 * Signs and POSTs one delivery to its source.
 *
 * @example
 * const reply = await ship(bed, { provider: "stripe", body: '{"id":"evt_1","type":"a.b"}' });
 */
export function ship(bed: StorableBed, shipment: Shipment): Promise<Reply> {
  const signed = signDelivery({
    provider: shipment.provider,
    secret: SECRET,
    body: shipment.body,
    timestamp: NOW_S,
    ...(shipment.id !== undefined && { id: shipment.id }),
    ...(shipment.type !== undefined && { type: shipment.type }),
  });
  return send(`${bed.url}/webhooks/${shipment.provider}`, {
    headers: { ...signed.headers, ...shipment.unsigned },
    body: Buffer.from(signed.body),
  });
}

/** The stored row of one event. */
export interface StoredRow {
  readonly dedupe_key: string;
  readonly event_type: string;
  readonly body: Buffer;
  readonly payload: unknown;
  readonly occurred_at: string | null;
  readonly entity_type: string | null;
  readonly entity_id: string | null;
  readonly entity_version: string | null;
}

/**
 * The row an answer's `id` names in `source`, or `undefined`.
 *
 * @example
 * const row = await storedRow(t, "stripe", JSON.parse(reply.text).id);
 */
export async function storedRow(t: TestLedger, source: string, id: string): Promise<StoredRow | undefined> {
  const { rows } = await t.pool.query<StoredRow>(
    `select dedupe_key, event_type, body, payload, occurred_at::text, entity_type, entity_id,
            entity_version::text
       from ${t.ledger.s}.event_records where source = $1::text and dedupe_key = $2::text`,
    [source, id],
  );
  return rows[0];
}

/**
 * Asserts a 200 `accepted` and a row holding the sent bytes exactly; returns the row.
 *
 * @example
 * const row = await assertStored(t, "stripe", reply, body);
 */
export async function assertStored(
  t: TestLedger,
  source: string,
  reply: Reply,
  body: string,
): Promise<StoredRow> {
  assert.equal(reply.status, 200, reply.text);
  const answer = JSON.parse(reply.text) as { status: string; id: string };
  assert.equal(answer.status, "accepted", reply.text);
  const row = await storedRow(t, source, answer.id);
  assert.ok(row, `no row for ${source}/${answer.id}`);
  assert.ok(row.body.equals(Buffer.from(body, "utf8")), "the stored body is not the bytes sent");
  return row;
}

/** A Stripe event as JSON text, with `inner` spliced raw into `data.object` and `top` raw into the top level. */
export function stripeText(options: {
  id?: string;
  type?: string;
  created?: string;
  inner?: string;
  top?: string;
}) {
  const id = options.id ?? '"evt_x"';
  const type = options.type ?? '"customer.subscription.updated"';
  const created = options.created ?? String(NOW_S - 5);
  const inner = options.inner ? `,${options.inner}` : "";
  const top = options.top ? `,${options.top}` : "";
  return (
    `{"id":${id},"object":"event","type":${type},"created":${created}${top},` +
    `"data":{"object":{"id":"sub_1","object":"subscription"${inner}}}}`
  );
}
