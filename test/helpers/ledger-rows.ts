import type { LedgerContext, Queryable } from "../../src/ledger/context.js";

/** An event row in any state, written straight into the ledger (the claim and the worker are tested elsewhere). */
export interface SeedRow {
  source?: string;
  id: string;
  type?: string;
  status?: "pending" | "failed" | "settled" | "dead" | "inline";
  outcome?: "applied" | "stale" | "unhandled" | "ignored";
  attempts?: number;
  lastError?: string;
  /** Seconds before now. */
  receivedAgo?: number;
  /** Seconds after receipt (settled rows). */
  settledAfter?: number;
  nextAttemptIn?: number;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** Inserts the rows; settled ones without an outcome get `applied`. */
export async function seedEvents(
  db: Queryable,
  ledger: LedgerContext,
  rows: readonly SeedRow[],
): Promise<void> {
  for (const r of rows) {
    const status = r.status ?? "pending";
    const payload = r.payload ?? { id: r.id };
    await db.query(
      `with e as (
         insert into ${ledger.s}.events (source, dedupe_key, event_type, body_sha256, status, outcome, attempts,
           last_error, received_at, settled_at, next_attempt_at)
         select $1::text, $2::text, $3::text, sha256(convert_to($4::text, 'utf8')), $6::text, $7::text, $8::int,
           $9::text, r, r + $11::float8 * interval '1 second', now() + $12::float8 * interval '1 second'
         from (select now() - $10::float8 * interval '1 second' as r) t
         returning source, dedupe_key, received_at
       )
       insert into ${ledger.s}.event_bodies (source, dedupe_key, received_at, body, payload, headers)
       select source, dedupe_key, received_at, convert_to($4::text, 'utf8'), $4::jsonb, $5::jsonb from e`,
      [
        r.source ?? "test",
        r.id,
        r.type ?? "test.event",
        JSON.stringify(payload),
        JSON.stringify(r.headers ?? {}),
        status,
        status === "settled" ? (r.outcome ?? "applied") : null,
        r.attempts ?? 0,
        r.lastError ?? null,
        r.receivedAgo ?? 0,
        status === "settled" ? (r.settledAfter ?? 0.1) : null,
        r.nextAttemptIn ?? 0,
      ],
    );
  }
}

/** Inserts `count` dead rows of one source in a single statement. */
export async function seedDead(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  count: number,
): Promise<void> {
  await db.query(
    `with e as (
       insert into ${ledger.s}.events (source, dedupe_key, event_type, body_sha256, status, attempts, last_error,
         received_at)
       select $1::text, 'evt_' || i, 'bulk.event', sha256('\\x7b7d'::bytea), 'dead', 10, 'boom',
         now() - i * interval '1 millisecond'
       from generate_series(1, $2::int) i
       returning source, dedupe_key, received_at
     )
     insert into ${ledger.s}.event_bodies (source, dedupe_key, received_at, body, payload)
     select source, dedupe_key, received_at, '\\x7b7d'::bytea, '{}' from e`,
    [source, count],
  );
}
