import pg from "pg";
import { type Pool, type PoolClient, withTransaction } from "../db/pool.js";
import { upsertVersions } from "../ledger/backfill.js";
import { ledgerContext } from "../ledger/context.js";
import { encodeVersion, type VersionInput, type VersionUnit } from "../ledger/version.js";

/** One entity and the version it is at in the app's own tables. */
export interface BackfillRow {
  /** Overrides the `entityType` option for this row. */
  readonly entityType?: string;
  /** The entity id as the provider sends it, e.g. `sub_123`. */
  readonly id: string | number | bigint | null;
  /** A number or numeric string (stored as given), or a `Date` / ISO 8601 string (needs `unit`); null skips. */
  readonly version: VersionInput | null;
}

/** Options of {@link backfillVersions}. */
export interface BackfillOptions {
  /** The ledger's database. */
  readonly pool: Pool;
  /** The ledger's schema. @defaultValue "hookledger" */
  readonly schema?: string;
  /**
   * The entity type, as the provider reports it (Stripe: `data.object.object`, e.g. `subscription`; Shopify: the
   * topic's resource, e.g. `orders`). Not needed when every row, or the query's first column, names it.
   */
  readonly entityType?: string;
  /** The entities to seed. Give either `rows` or `sql`. */
  readonly rows?: Iterable<BackfillRow> | AsyncIterable<BackfillRow>;
  /**
   * A query on the app's database, run in a read-only transaction, returning `(id, version)` or
   * `(entity_type, id, version)`. @example "select stripe_id, floor(extract(epoch from updated_at)) from subscriptions"
   */
  readonly sql?: string;
  /**
   * The app's database, where `sql` runs; it holds one connection for the whole read, so a shared `pool` needs two.
   * @defaultValue `pool`
   */
  readonly appPool?: Pool;
  /** Recorded as the source of the seeded versions. @defaultValue "backfill" */
  readonly source?: string;
  /** What dates count in: `"s"` for Stripe (as its `created`), `"ms"` for every other provider and `ctx.advance()`. */
  readonly unit?: VersionUnit;
  /** Entities per statement. @defaultValue 1000 */
  readonly batchSize?: number;
  /** Count what would change; write nothing. */
  readonly dryRun?: boolean;
  /** Called after each batch with the counts so far. */
  readonly onProgress?: (counts: BackfillCounts) => void;
}

/** What a backfill did (or, in a dry run, would do). */
export interface BackfillCounts {
  /** Rows read. */
  read: number;
  /** Entities the guard had no version for. */
  inserted: number;
  /** Entities whose stored version was lower. */
  raised: number;
  /** Rows that changed nothing: the stored version was equal or higher, or the id repeated in its batch. */
  kept: number;
  /** Rows without an id or a version. */
  skipped: number;
}

/** Why a backfill stopped; the batches before it were written (unless a dry run). */
export type BackfillFailure =
  | "query_failed"
  | "wrong_columns"
  | "entity_type_missing"
  | "invalid_version"
  | "unit_missing";

/** The outcome of {@link backfillVersions}. */
export type BackfillResult =
  | ({ readonly ok: true; readonly dryRun: boolean } & BackfillCounts)
  | ({
      readonly ok: false;
      readonly dryRun: boolean;
      readonly reason: BackfillFailure;
      readonly detail: string;
    } & BackfillCounts);

class Stop extends Error {
  constructor(
    readonly reason: BackfillFailure,
    message: string,
  ) {
    super(message);
  }
}

type Raw = readonly [entityType: unknown, id: unknown, version: unknown];

/**
 * Seeds the version guard (`ctx.advance()`) from the app's own tables, for an app whose webhooks were processed
 * before the worker took over: without it, the first stale event per entity after the switch would apply. Upserts
 * in batches and never lowers a stored version; an equal one is kept (equal versions advance, so the next event of
 * that version still applies). Versions are encoded as the guard encodes them: numbers as given, dates in `unit`.
 * Safe to run again. See docs/retrofit.md.
 *
 * @example
 * import { backfillVersions, createPool } from "hookledger";
 *
 * const pool = createPool({ connectionString: process.env.DATABASE_URL!, role: "admin" });
 * const result = await backfillVersions({
 *   pool,
 *   entityType: "subscription",
 *   sql: "select stripe_id, floor(extract(epoch from updated_at)) from subscriptions",
 *   source: "stripe",
 * });
 * if (!result.ok) console.error(result.detail);
 * else console.log(`${result.inserted} seeded, ${result.raised} raised, ${result.kept} kept`);
 */
export async function backfillVersions(options: BackfillOptions): Promise<BackfillResult> {
  if ((options.rows === undefined) === (options.sql === undefined)) {
    throw new Error("backfillVersions() needs exactly one of `rows` and `sql`");
  }
  const batchSize = options.batchSize ?? 1000;
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new Error(`backfillVersions(): batchSize ${batchSize} is not a positive whole number`);
  }
  const ledger = ledgerContext(options.schema);
  const write = { source: options.source ?? "backfill", dryRun: options.dryRun === true };
  const counts: BackfillCounts = { read: 0, inserted: 0, raised: 0, kept: 0, skipped: 0 };

  const apply = async (raws: readonly Raw[]): Promise<void> => {
    const batch = { entityTypes: [] as string[], entityIds: [] as string[], versions: [] as string[] };
    for (const [type, id, version] of raws) {
      counts.read++;
      if (id === null || id === undefined || version === null || version === undefined) {
        counts.skipped++;
        continue;
      }
      const entityType = type ?? options.entityType;
      if (typeof entityType !== "string" || entityType === "") {
        throw new Stop(
          "entity_type_missing",
          `${String(id)} has no entity type: give entityType, or name it in each row`,
        );
      }
      const encoded = encodeVersion(version, options.unit);
      if (!encoded.ok) {
        throw new Stop(
          encoded.reason === "unit_missing" ? "unit_missing" : "invalid_version",
          encoded.reason === "unit_missing"
            ? `the version of ${entityType} ${String(id)} is a date: say what the guard counts it in, unit "s" for Stripe (as its created) or "ms" for other providers`
            : `the version of ${entityType} ${String(id)} is ${JSON.stringify(String(version))}: return a number or a date`,
        );
      }
      batch.entityTypes.push(entityType);
      batch.entityIds.push(String(id));
      batch.versions.push(encoded.version);
    }
    if (batch.versions.length > 0) {
      const { inserted, raised } = await upsertVersions(options.pool, ledger, batch, write);
      counts.inserted += inserted;
      counts.raised += raised;
      counts.kept += batch.versions.length - inserted - raised;
    }
    options.onProgress?.({ ...counts });
  };

  try {
    if (options.rows !== undefined) {
      let pending: Raw[] = [];
      for await (const row of options.rows) {
        pending.push([row.entityType, row.id, row.version]);
        if (pending.length >= batchSize) {
          await apply(pending);
          pending = [];
        }
      }
      if (pending.length > 0 || counts.read === 0) await apply(pending);
    } else {
      const sql = options.sql ?? "";
      await withTransaction(
        options.appPool ?? options.pool,
        (client) => readQuery(client, sql, batchSize, options.entityType, apply),
        {
          begin: "begin transaction read only",
        },
      );
    }
  } catch (error) {
    if (error instanceof Stop)
      return { ok: false, dryRun: write.dryRun, reason: error.reason, detail: error.message, ...counts };
    throw error;
  }
  return { ok: true, dryRun: write.dryRun, ...counts };
}

/** Runs the app's query through a cursor, checking its columns, and applies its rows batch by batch. */
async function readQuery(
  client: PoolClient,
  sql: string,
  batchSize: number,
  entityType: string | undefined,
  apply: (raws: readonly Raw[]) => Promise<void>,
): Promise<void> {
  const text = sql.trim().replace(/;+\s*$/, "");
  // The extended protocol runs exactly one statement: `select 1; commit; delete …` cannot end the read-only
  // transaction and write in autocommit.
  const declare = { text: `declare hookledger_backfill no scroll cursor for ${text}`, queryMode: "extended" };
  const fetch = { text: `fetch forward ${batchSize} from hookledger_backfill`, rowMode: "array" };
  await appQuery(client, declare);
  for (let first = true; ; first = false) {
    const result = await appQuery(client, fetch);
    if (first) checkColumns(result.fields, entityType);
    const three = result.fields.length === 3;
    await apply(result.rows.map((r: unknown[]) => (three ? [r[0], r[1], r[2]] : [undefined, r[0], r[1]])));
    if (result.rows.length < batchSize) return;
  }
}

async function appQuery(client: PoolClient, query: object): Promise<pg.QueryResult> {
  try {
    return await client.query(query as pg.QueryConfig);
  } catch (error) {
    if (error instanceof pg.DatabaseError)
      throw new Stop("query_failed", `the query failed: ${error.message}`);
    throw error;
  }
}

function checkColumns(fields: readonly pg.FieldDef[], entityType: string | undefined): void {
  const names = fields.map((f) => f.name).join(", ");
  if (fields.length === 3 && entityType !== undefined) {
    throw new Stop(
      "wrong_columns",
      `the query returns three columns (${names}), so its first names the entity type, and the entity type is given too: drop one`,
    );
  }
  if (fields.length === 2 && entityType === undefined) {
    throw new Stop(
      "entity_type_missing",
      `the query returns two columns (${names}) and no entity type is given: give entityType, or return the entity type as a first column`,
    );
  }
  if (fields.length !== 2 && fields.length !== 3) {
    throw new Stop(
      "wrong_columns",
      `the query returns ${fields.length} column${fields.length === 1 ? "" : "s"} (${names}): return two, (id, version), or three, (entity_type, id, version)`,
    );
  }
}
