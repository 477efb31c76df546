// The floor of a correct receiver (issue 36): node:http, the HMAC check, and a claim of the same row shape into the
// same tables as hookledger's (`events` and `event_bodies` of a migrated schema), batched: each of 2 connections
// takes up to 256 waiting deliveries into one multi-row `insert … on conflict do nothing returning`, and every
// delivery is answered after that statement committed (group commit). Nothing else: no logs, statistics, caches,
// metrics, size caps or tombstones. A peer to measure against, not product code.
import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";
import pg from "pg";
import { required, servePeer } from "./http-peer.js";

const schema = required("BENCH_SCHEMA");
const CONNECTIONS = 2;
const BATCH = 256;

interface Waiting {
  readonly key: string;
  readonly type: string;
  readonly sha: Buffer;
  readonly body: Buffer;
  readonly entityType: string | null;
  readonly entityId: string | null;
  readonly created: number | null;
  readonly res: ServerResponse;
}

const claim = `with r as (
  select * from unnest($1::text[], $2::text[], $3::bytea[], $4::bytea[], $5::text[], $6::text[], $7::numeric[])
    as r(dedupe_key, event_type, sha, body, entity_type, entity_id, created)
), inserted as (
  insert into ${schema}.events (source, dedupe_key, event_type, body_sha256, secret_index, entity_type, entity_id,
    entity_version, occurred_at)
  select 'stripe', dedupe_key, event_type, sha, 0, entity_type, entity_id, created, to_timestamp(created::float8)
  from r order by dedupe_key
  on conflict do nothing
  returning dedupe_key, received_at
), bodies as (
  insert into ${schema}.event_bodies (source, dedupe_key, received_at, body, payload)
  select 'stripe', i.dedupe_key, i.received_at, r.body, convert_from(r.body, 'UTF8')::jsonb
  from inserted i join r using (dedupe_key)
)
select dedupe_key from inserted`;

const queue: Waiting[] = [];
const clients = await Promise.all(
  Array.from({ length: CONNECTIONS }, async () => {
    const client = new pg.Client({ connectionString: required("DATABASE_URL") });
    await client.connect();
    return { client, busy: false };
  }),
);

function answer(batch: readonly Waiting[], status: number, body: string): void {
  for (const w of batch) w.res.writeHead(status, { "content-type": "application/json" }).end(body);
}

function flush(): void {
  for (const c of clients) {
    if (c.busy || queue.length === 0) continue;
    c.busy = true;
    const batch = queue.splice(0, BATCH);
    c.client
      .query(claim, [
        batch.map((w) => w.key),
        batch.map((w) => w.type),
        batch.map((w) => w.sha),
        batch.map((w) => w.body),
        batch.map((w) => w.entityType),
        batch.map((w) => w.entityId),
        batch.map((w) => w.created),
      ])
      .then(
        () => answer(batch, 200, '{"received":true}'),
        (error: Error) => {
          console.error(`claim failed: ${error.message}`);
          answer(batch, 503, '{"error":"unavailable"}');
        },
      )
      .finally(() => {
        c.busy = false;
        flush();
      });
  }
}

await servePeer(
  required("BENCH_STRIPE_SECRET"),
  (body, res) => {
    const event = JSON.parse(body.toString("utf8")) as {
      id: string;
      type: string;
      created?: number;
      data?: { object?: { object?: string; id?: string } };
    };
    queue.push({
      key: event.id,
      type: event.type,
      sha: createHash("sha256").update(body).digest(),
      body,
      entityType: event.data?.object?.object ?? null,
      entityId: event.data?.object?.id ?? null,
      created: event.created ?? null,
      res,
    });
    flush();
  },
  async () => {
    await Promise.all(clients.map((c) => c.client.end()));
  },
);
