import { type LedgerContext, type Queryable, statement } from "./context.js";

// Strictly lower only (`<`): a stored version equal to the seeded one is kept as it is, with the source and event
// that wrote it. Nothing is lost, because the guard lets equal versions advance (advance.ts): the next event of that
// version still applies. A raised version drops the receipt order of the event that set the older one (null sorts
// before every event), so any event of the seeded version advances. An id repeated within one batch keeps its
// highest version (an upsert cannot touch a row twice in one statement). `xmax = 0` marks the rows this statement
// inserted rather than updated.
const upsertSql = statement(
  "backfill_versions",
  (s) => `insert into ${s}.entity_versions as v (entity_type, entity_id, version, source, dedupe_key)
select t, i, n, $4::text, 'backfill'
from (
  select distinct on (t, i) t, i, n
  from unnest($1::text[], $2::text[], $3::numeric[]) as b(t, i, n)
  order by t, i, n desc
) as d
on conflict (entity_type, entity_id) do update
  set version = excluded.version, source = excluded.source, dedupe_key = excluded.dedupe_key, applied_at = now(),
    received_at = null, seq = null
  where v.version < excluded.version
returning (xmax = 0) as inserted`,
);

const compareSql = statement(
  "backfill_versions_dry_run",
  (s) => `select count(*) filter (where v.version is null)::int as inserted,
  count(*) filter (where v.version < d.n)::int as raised
from (
  select distinct on (t, i) t, i, n
  from unnest($1::text[], $2::text[], $3::numeric[]) as b(t, i, n)
  order by t, i, n desc
) as d
left join ${s}.entity_versions as v on v.entity_type = d.t and v.entity_id = d.i`,
);

/** One batch of seeded versions, as parallel arrays (versions encoded by `encodeVersion`). */
export interface VersionBatch {
  readonly entityTypes: string[];
  readonly entityIds: string[];
  readonly versions: string[];
}

/**
 * Seeds the version guard with one batch: inserts the entities it has no version for and raises those whose
 * stored version is lower; never lowers one. With `dryRun`, counts what it would do and writes nothing.
 *
 * @example
 * const { inserted, raised } = await upsertVersions(pool, ledger, { entityTypes: ["subscription"], entityIds: ["sub_1"], versions: ["1704067200"] }, { source: "stripe" });
 */
export async function upsertVersions(
  db: Queryable,
  ledger: LedgerContext,
  batch: VersionBatch,
  options: { readonly source: string; readonly dryRun: boolean },
): Promise<{ inserted: number; raised: number }> {
  const values = [batch.entityTypes, batch.entityIds, batch.versions];
  if (options.dryRun) {
    const { rows } = await db.query<{ inserted: number; raised: number }>({
      ...compareSql(ledger),
      values,
    });
    return { inserted: rows[0]?.inserted ?? 0, raised: rows[0]?.raised ?? 0 };
  }
  const { rows } = await db.query<{ inserted: boolean }>({
    ...upsertSql(ledger),
    values: [...values, options.source],
  });
  const inserted = rows.filter((r) => r.inserted).length;
  return { inserted, raised: rows.length - inserted };
}
