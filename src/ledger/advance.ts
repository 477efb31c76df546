import { type LedgerContext, type Queryable, statement } from "./context.js";

// Equal versions advance when received later: the stored (version, received_at, seq) is compared as a tuple, so a
// version is stale when strictly older, or equal and received earlier than the event that set it. Stripe's
// `created` has one-second resolution, so a create and an update often share a second: refusing ties would drop
// the update whenever they arrive in order; comparing only the version would let whichever of two concurrent
// workers finishes last win. A null receipt order (rows from before migration 008, backfill-versions) sorts first.
// See docs/architecture.md, "The version guard".
const advanceSql = statement(
  "advance",
  (s) => `insert into ${s}.entity_versions as v
  (entity_type, entity_id, version, source, dedupe_key, received_at, seq)
values ($1::text, $2::text, $3::numeric, $4::text, $5::text, $6::timestamptz, $7::bigint)
on conflict (entity_type, entity_id) do update
  set version = excluded.version, source = excluded.source, dedupe_key = excluded.dedupe_key, applied_at = now(),
    received_at = excluded.received_at, seq = excluded.seq
  where (v.version, coalesce(v.received_at, '-infinity'), coalesce(v.seq, 0))
    <= (excluded.version, coalesce(excluded.received_at, '-infinity'), coalesce(excluded.seq, 0))
returning 1 as advanced`,
);

/**
 * The version guard: records `version` as the entity's latest and returns true, or returns false (stale) when a
 * newer version was already applied, or an equal one by an event received later (`receivedAt`, then `seq`: the
 * event's receipt order in the ledger). Run inside the event's transaction, so a rollback undoes it; concurrent
 * advances of one entity serialise on its row.
 *
 * @example
 * if (!(await advanceVersion(tx, ledger, { entityType: "subscription", entityId: "sub_1", version: 1700000000, source: "stripe", dedupeKey: "evt_1", receivedAt: new Date(), seq: "42" }))) return;
 */
export async function advanceVersion(
  tx: Queryable,
  ledger: LedgerContext,
  input: {
    entityType: string;
    entityId: string;
    version: number | string;
    source: string;
    dedupeKey: string;
    receivedAt: Date | null;
    seq: string | null;
  },
): Promise<boolean> {
  const result = await tx.query({
    ...advanceSql(ledger),
    values: [
      input.entityType,
      input.entityId,
      input.version,
      input.source,
      input.dedupeKey,
      input.receivedAt,
      input.seq,
    ],
  });
  return result.rows.length === 1;
}
