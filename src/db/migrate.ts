import { readdir, readFile } from "node:fs/promises";
import { packageFile } from "../files.js";
import { type Pool, type PoolClient, quoteIdent, withTransaction } from "./pool.js";

const MIGRATIONS_DIR = packageFile("db/migrations/");

/** One numbered migration file. */
export interface Migration {
  readonly id: number;
  readonly name: string;
  readonly sql: string;
}

/**
 * Reads the numbered `.sql` migrations shipped with the package, in order.
 *
 * @example
 * const latest = (await loadMigrations()).at(-1)?.id;
 */
export async function loadMigrations(): Promise<Migration[]> {
  const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d+_[\w-]+\.sql$/.test(f)).sort();
  return Promise.all(
    files.map(async (name) => ({
      id: Number.parseInt(name, 10),
      name,
      sql: await readFile(new URL(name, MIGRATIONS_DIR), "utf8"),
    })),
  );
}

/**
 * Applies every migration not yet applied to `schema`, each in its own transaction under a transaction-scoped
 * advisory lock keyed on the schema name, which checks again that it is still pending: any number of processes may
 * call it at once and each migration runs exactly once. No session state is kept between the transactions, so it
 * works through a pooler in transaction mode too. Then makes the day partitions of event bodies for the week ahead
 * that are missing.
 *
 * @returns the names of the migrations this call applied.
 * @example
 * await migrate(pool, "hookledger");
 */
export async function migrate(pool: Pool, schema: string): Promise<string[]> {
  const migrations = await loadMigrations();
  const s = quoteIdent(schema);
  const applied: string[] = [];
  const locked = (tx: PoolClient) =>
    tx.query("select pg_advisory_xact_lock(hashtext('hookledger.migrate'), hashtext($1::text))", [schema]);
  for (const m of migrations) {
    const ran = await withTransaction(pool, async (tx) => {
      await locked(tx);
      await tx.query(`create schema if not exists ${s}`);
      await tx.query(
        `create table if not exists ${s}.migrations (
           id integer primary key, name text not null, applied_at timestamptz not null default now())`,
      );
      const done = await tx.query(`select 1 from ${s}.migrations where id = $1::int`, [m.id]);
      if (done.rowCount !== 0) return false;
      try {
        // Migrations use unqualified names; the search path puts them in the configured schema.
        await tx.query(`set local search_path to ${s}`);
        await tx.query(m.sql);
      } catch (error) {
        throw new Error(`migration ${m.name} failed`, { cause: error });
      }
      await tx.query(`insert into ${s}.migrations (id, name) values ($1::int, $2::text)`, [m.id, m.name]);
      return true;
    });
    if (ran) applied.push(m.name);
  }
  // The day partitions of event bodies for the week ahead (migration 010): a deploy that runs `migrate` keeps
  // them made even where the running processes may not change the schema.
  await withTransaction(pool, async (tx) => {
    await locked(tx);
    await tx.query(`select ${s}.make_body_partitions(now(), 8)`);
  });
  return applied;
}

/**
 * Whether `schema` has every shipped migration applied (the readiness check).
 *
 * @example
 * if (!(await migrationsCurrent(pool, "hookledger"))) throw new Error("run `hookledger migrate`");
 */
export async function migrationsCurrent(pool: Pool, schema: string): Promise<boolean> {
  const latest = (await loadMigrations()).at(-1)?.id ?? 0;
  const result = await pool.query<{ id: number | null }>(
    `select max(id) as id from ${quoteIdent(schema)}.migrations`,
  );
  return (result.rows[0]?.id ?? 0) >= latest;
}
