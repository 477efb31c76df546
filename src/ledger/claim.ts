import { createHash } from "node:crypto";
import type { ParsedEvent } from "../providers/types.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";

/** How an event reached the ledger. */
export type ArrivedVia = "delivery" | "replay" | "requeue";

/** One verified delivery to claim. */
export interface ClaimInput {
  readonly source: string;
  readonly event: ParsedEvent;
  /** The raw body, byte-exact. */
  readonly body: Uint8Array;
  /** Headers worth keeping (never signatures or tokens). */
  readonly headers: Readonly<Record<string, string>>;
  readonly secretIndex: number | null;
  readonly arrivedVia: ArrivedVia;
  /**
   * Whether this claim's transaction carries the NOTIFY that wakes workers.
   * @defaultValue true; the HTTP edge throttles it (see `notifyThrottle`)
   */
  readonly notify?: boolean;
}

/** The answer of a claim: the first delivery wins, every other one is a duplicate. */
export type ClaimResult =
  | { readonly status: "accepted"; readonly id: string }
  | {
      readonly status: "duplicate";
      readonly id: string;
      /** The body differs from the first delivery's (recorded in `duplicates.body_mismatches`). */
      readonly bodyMismatch: boolean;
    };

/**
 * Claims an event: one atomic `insert … on conflict do nothing returning`, with a NOTIFY in the same implicit
 * transaction (unless `notify` is false). Run it in autocommit on a session pinned to READ COMMITTED and `synchronous_commit=on` (see
 * `createPool`): a duplicate racing an uncommitted claim then waits for it and answers after it commits or aborts.
 *
 * @example
 * const { status, id } = await claimEvent(pool, ledger, { source: "stripe", event, body, headers: {}, secretIndex: 0, arrivedVia: "delivery" });
 */
export async function claimEvent(
  db: Queryable,
  ledger: LedgerContext,
  input: ClaimInput,
): Promise<ClaimResult> {
  const { event } = input;
  const sha256 = createHash("sha256").update(input.body).digest();
  // The conflicting row can disappear between the two statements only if it is pruned at that instant; the
  // second pass then inserts. Three passes bound the loop.
  for (let pass = 0; pass < 3; pass++) {
    const inserted = await db.query<{ dedupe_key: string }>({
      ...(input.notify === false ? claimQuietSql : claimSql)(ledger),
      values: [
        input.source,
        event.dedupeKey,
        event.type,
        input.body,
        sha256,
        event.dedupeOnBodyHash,
        payloadJson(event.payload),
        input.headers,
        input.secretIndex,
        event.entity?.type ?? null,
        event.entity?.id ?? null,
        event.entity?.version ?? null,
        event.occurredAt ?? null,
        input.arrivedVia,
        ...(input.notify === false ? [] : [ledger.channel]),
      ],
    });
    if (inserted.rows[0]) return { status: "accepted", id: inserted.rows[0].dedupe_key };
    const existing = await db.query<{ dedupe_key: string; mismatch: boolean }>({
      ...duplicateSql(ledger),
      values: [input.source, event.dedupeKey, sha256, event.dedupeOnBodyHash],
    });
    const found = existing.rows[0];
    if (found) return { status: "duplicate", id: found.dedupe_key, bodyMismatch: found.mismatch };
  }
  throw new Error(`claim of ${input.source}/${event.dedupeKey} conflicted with a row that no longer exists`);
}

const insertSql = (s: string) => `insert into ${s}.events (source, dedupe_key, event_type, body, body_sha256,
    dedupe_on_body, payload, headers, secret_index, entity_type, entity_id, entity_version, occurred_at, arrived_via)
  values ($1::text, $2::text, $3::text, $4::bytea, $5::bytea, $6::boolean, $7::jsonb, $8::jsonb, $9::smallint,
    $10::text, $11::text, $12::numeric, $13::timestamptz, $14::text)
  on conflict do nothing
  returning dedupe_key`;

// No conflict target: both the primary key and the body-hash index (GitHub) count as "already claimed".
const claimSql = statement(
  "claim",
  (s) => `with inserted as (${insertSql(s)})
select dedupe_key, pg_notify($15::text, '') from inserted`,
);

const claimQuietSql = statement("claim-quiet", insertSql);

// A plain read: it never waits on the row lock a worker holds while the event's handler runs.
const duplicateSql = statement(
  "duplicate",
  (s) => `with existing as (
  (select dedupe_key, body_sha256 <> $3::bytea as mismatch from ${s}.events
    where source = $1::text and dedupe_key = $2::text)
  union all
  (select dedupe_key, false from ${s}.events
    where $4::boolean and source = $1::text and body_sha256 = $3::bytea and dedupe_on_body)
  limit 1
), counted as (
  insert into ${s}.duplicates as d (source, dedupe_key, count, body_mismatches)
  select $1::text, dedupe_key, 1, mismatch::int from existing
  on conflict (source, dedupe_key) do update
    set count = d.count + 1, body_mismatches = d.body_mismatches + excluded.body_mismatches, last_seen_at = now()
  returning dedupe_key
)
select counted.dedupe_key, existing.mismatch from counted join existing using (dedupe_key)`,
);

/**
 * The payload as jsonb text. Postgres jsonb cannot hold U+0000, which JSON allows: such characters become U+FFFD in
 * the payload (the raw body keeps them, byte-exact), so a verified event is never refused for it.
 */
function payloadJson(payload: unknown): string {
  const json = JSON.stringify(payload);
  return json.includes("\\u0000")
    ? JSON.stringify(payload, (_, v) => (typeof v === "string" ? v.replaceAll("\0", "\ufffd") : v))
    : json;
}
