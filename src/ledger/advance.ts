import { type LedgerContext, type Queryable, statement } from "./context.js";

// Equal versions advance (`<=`): a version is stale only when strictly older. Stripe's `created` has one-second
// resolution, so a create and an update often share a second; refusing ties would drop the update whenever they
// arrive in order, the common case. The worker takes events in receipt order, so among equal versions the one
// received last wins. See docs/architecture.md, "The version guard".
const advanceSql = statement(
  "advance",
  (s) => `insert into ${s}.entity_versions as v (entity_type, entity_id, version, source, dedupe_key)
values ($1::text, $2::text, $3::numeric, $4::text, $5::text)
on conflict (entity_type, entity_id) do update
  set version = excluded.version, source = excluded.source, dedupe_key = excluded.dedupe_key, applied_at = now()
  where v.version <= excluded.version
returning 1 as advanced`,
);

/**
 * The version guard: records `version` as the entity's latest and returns true, or returns false (stale) when a
 * newer version was already applied. Run inside the event's transaction, so a rollback undoes it; concurrent
 * advances of one entity serialise on its row.
 *
 * @example
 * if (!(await advanceVersion(tx, ledger, { entityType: "subscription", entityId: "sub_1", version: 1700000000, source: "stripe", dedupeKey: "evt_1" }))) return;
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
  },
): Promise<boolean> {
  const result = await tx.query({
    ...advanceSql(ledger),
    values: [input.entityType, input.entityId, input.version, input.source, input.dedupeKey],
  });
  return result.rows.length === 1;
}
