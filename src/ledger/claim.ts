import { createHash } from "node:crypto";
import type pg from "pg";
import { isHookledgerPool, type PoolClient, withTransaction } from "../db/pool.js";
import type { ParsedEvent } from "../providers/types.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import { storableEvent, storablePayloadJson } from "./storable.js";
import {
  againIfPrunedMeanwhile,
  notTombstonedSql,
  recheckTombstoneSql,
  tombstoneDuplicate,
} from "./tombstone.js";

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
 * Claims an event: one atomic `insert … on conflict do nothing returning`, with a NOTIFY in the same transaction
 * (unless `notify` is false), at READ COMMITTED with `synchronous_commit=on`: a duplicate racing an uncommitted
 * claim then waits for it and answers after it commits or aborts. On a pool made by `createPool` (whose sessions
 * pin both) it runs in autocommit; on any other `pg` pool (library mode) in an explicit transaction that sets both.
 * A client passed as `db` is used as it is: the caller's transaction, the caller's settings. The event is first made
 * storable (`storableEvent`: an over-long or NUL-bearing key hashed, an impossible time dropped), so the answer's
 * `id` may be a `sha256:` key.
 *
 * @example
 * const { status, id } = await claimEvent(pool, ledger, { source: "stripe", event, body, headers: {}, secretIndex: 0, arrivedVia: "delivery" });
 */
export async function claimEvent(
  db: Queryable,
  ledger: LedgerContext,
  claimed: ClaimInput,
): Promise<ClaimResult> {
  // The edge has already done this (and logged it); a library caller's event gets the same treatment.
  const input = { ...claimed, event: storableEvent(claimed.event).event };
  return withClaimSession(db, (session) => claimOn(session, ledger, input));
}

/**
 * Runs a claim with the claim's session guarantees, as {@link claimEvent} does: as it is on a pool made by
 * `createPool` or on a caller's client, in an explicit READ COMMITTED, synchronous-commit transaction on any other
 * `pg` pool. Other claims (the inline guard's) share it.
 *
 * @example
 * const claim = await withClaimSession(appPool, (session) => session.query({ ...claimStatement(ledger), values }));
 */
export function withClaimSession<T>(db: Queryable, claim: (db: Queryable) => Promise<T>): Promise<T> {
  return againIfPrunedMeanwhile(() => inClaimSession(db, claim));
}

/**
 * Runs `claim` once with the claim's session guarantees (as {@link withClaimSession}, without running it again when
 * a prune raced it): in autocommit on a pool made by `createPool` or a caller's client, in an explicit READ
 * COMMITTED, synchronous-commit transaction on any other `pg` pool. The batched claim uses it.
 *
 * @example
 * const accepted = await inClaimSession(pool, (session) => insertClaimBatch(session, ledger, rows, ledger.channel));
 */
export function inClaimSession<T>(db: Queryable, claim: (db: Queryable) => Promise<T>): Promise<T> {
  return isForeignPool(db) ? inClaimTransaction(db, claim) : claim(db);
}

/** A `pg` pool (duck-typed: an app may load its own copy of `pg`) that `createPool` did not make. */
function isForeignPool(db: Queryable): db is Queryable & { connect(): Promise<PoolClient> } {
  const candidate = db as Partial<pg.Pool>;
  return (
    typeof candidate.connect === "function" &&
    typeof candidate.totalCount === "number" &&
    !isHookledgerPool(db)
  );
}

// The app's sessions may default to SERIALIZABLE (a racing duplicate would fail with a serialization error instead
// of waiting) or to asynchronous commit (a 200 could precede durability): set both for this transaction only, and
// the ingest pool's generic plans (db/pool.ts).
function inClaimTransaction<T>(
  pool: { connect(): Promise<PoolClient> },
  claim: (client: PoolClient) => Promise<T>,
): Promise<T> {
  return withTransaction(pool, claim, {
    begin:
      "begin isolation level read committed; set local synchronous_commit = on; set local plan_cache_mode = force_generic_plan",
  });
}

async function claimOn(db: Queryable, ledger: LedgerContext, input: ClaimInput): Promise<ClaimResult> {
  const { event } = input;
  const sha256 = createHash("sha256").update(input.body).digest();
  // The conflicting row can disappear between the two statements only if it is pruned at that instant; the
  // second pass then inserts. Three passes bound the loop.
  for (let pass = 0; pass < 3; pass++) {
    const inserted = await db.query<{ dedupe_key: string }>({
      ...(input.notify === false ? claimQuietSql : claimSql)(ledger),
      values: [...insertValues(input, sha256), ...(input.notify === false ? [] : [ledger.channel])],
    });
    if (inserted.rows[0]) return { status: "accepted", id: inserted.rows[0].dedupe_key };
    const found = await countDuplicate(db, ledger, input, sha256);
    if (found) return found;
  }
  throw new Error(`claim of ${input.source}/${event.dedupeKey} conflicted with a row that no longer exists`);
}

/**
 * The claim's insert as two common table expressions (values `$1`–`$14`: {@link insertValues}): `inserted`, the
 * key and state row in `events`, which inserts nothing for the key of a pruned event (its tombstone), and `bodies`,
 * the immutable body, payload and headers of each row inserted, in `event_bodies` (migration 010), with the same
 * `received_at` (one transaction, one `now()`). With `inline`, the row is claimed by an app's own route
 * (docs/architecture.md §7): status `inline` and its lease, `$15` milliseconds from now, in `next_attempt_at`.
 *
 * @example
 * const sql = `with ${claimCtes(ledger.s, { inline: true })} select dedupe_key, next_attempt_at from inserted`;
 */
export const claimCtes = (s: string, options: { inline?: boolean } = {}) => `inserted as (
  insert into ${s}.events (source, dedupe_key, event_type, body_sha256, dedupe_on_body, secret_index, entity_type,
    entity_id, entity_version, occurred_at, arrived_via${options.inline ? ", status, next_attempt_at" : ""})
  select $1::text, $2::text, $3::text, $5::bytea, $6::boolean, $9::smallint, $10::text, $11::text, $12::numeric,
    $13::timestamptz, $14::text${options.inline ? ", 'inline', now() + $15::int * interval '1 millisecond'" : ""}
  ${notTombstonedSql(s)}
  on conflict do nothing
  returning dedupe_key, received_at${options.inline ? ", next_attempt_at" : ""}, ${recheckTombstoneSql(s)}
), bodies as (
  insert into ${s}.event_bodies (source, dedupe_key, received_at, body, payload, headers)
  select $1::text, dedupe_key, received_at, $4::bytea, $7::jsonb, $8::jsonb from inserted
)`;

/**
 * The values `$1`–`$14` of {@link claimCtes} for one delivery. With `payloadFromBody` the payload's place (`$7`) is
 * left null: the batched claim has Postgres read the payload from the body instead.
 *
 * @example
 * const values = [...insertValues(input, sha256), leaseMs];
 */
export function insertValues(
  input: Omit<ClaimInput, "notify">,
  sha256: Uint8Array,
  payloadFromBody = false,
): unknown[] {
  const { event } = input;
  return [
    input.source,
    event.dedupeKey,
    event.type,
    input.body,
    sha256,
    event.dedupeOnBodyHash,
    payloadFromBody ? null : storablePayloadJson(event.payload),
    input.headers,
    input.secretIndex,
    event.entity?.type ?? null,
    event.entity?.id ?? null,
    event.entity?.version ?? null,
    event.occurredAt ?? null,
    input.arrivedVia,
  ];
}

/**
 * After a claim conflicted: finds the row that holds the event (by dedupe key, or by body hash where the key is
 * unsigned) and counts this delivery in `duplicates`; else the tombstone of a pruned event, counted nowhere.
 * `undefined` when neither exists (a row pruned at that very instant, before its tombstone was visible).
 *
 * @example
 * const duplicate = await countDuplicate(pool, ledger, input, sha256);
 */
export async function countDuplicate(
  db: Queryable,
  ledger: LedgerContext,
  input: Pick<ClaimInput, "source" | "event">,
  sha256: Uint8Array,
): Promise<Extract<ClaimResult, { status: "duplicate" }> | undefined> {
  const existing = await db.query<{ dedupe_key: string; mismatch: boolean }>({
    ...duplicateSql(ledger),
    values: [input.source, input.event.dedupeKey, sha256, input.event.dedupeOnBodyHash],
  });
  const found = existing.rows[0];
  if (!found) return tombstoneDuplicate(db, ledger, input, sha256);
  return { status: "duplicate", id: found.dedupe_key, bodyMismatch: found.mismatch };
}

// No conflict target: both the primary key and the body-hash index (GitHub) count as "already claimed".
const claimSql = statement(
  "claim",
  (s) => `with ${claimCtes(s)}
select dedupe_key, pg_notify($15::text, '') from inserted`,
);

const claimQuietSql = statement("claim-quiet", (s) => `with ${claimCtes(s)} select dedupe_key from inserted`);

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
