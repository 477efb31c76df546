import { readdir, readFile } from "node:fs/promises";
import { packageFile } from "../files.js";
import { type Pool, quoteIdent } from "./pool.js";

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
 * Applies every migration not yet applied to `schema`, each in its own transaction, under a session advisory lock
 * keyed on the schema name: any number of processes may call it at once and each migration runs exactly once.
 * Then makes the day partitions of event bodies for the week ahead that are missing.
 *
 * @returns the names of the migrations this call applied.
 * @example
 * await migrate(pool, "hookledger");
 */
export async function migrate(pool: Pool, schema: string): Promise<string[]> {
  const migrations = await loadMigrations();
  const s = quoteIdent(schema);
  const client = await pool.connect();
  const applied: string[] = [];
  let broken: Error | undefined;
  // Unheard, a connection lost between statements would crash the process; heard, the next statement fails.
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    await client.query("select pg_advisory_lock(hashtext('hookledger.migrate'), hashtext($1::text))", [
      schema,
    ]);
    try {
      await client.query(`create schema if not exists ${s}`);
      await client.query(
        `create table if not exists ${s}.migrations (
           id integer primary key, name text not null, applied_at timestamptz not null default now())`,
      );
      const done = await client.query<{ id: number }>(`select id from ${s}.migrations`);
      const doneIds = new Set(done.rows.map((r) => r.id));
      for (const m of migrations) {
        if (doneIds.has(m.id)) continue;
        await client.query("begin");
        try {
          // Migrations use unqualified names; the search path puts them in the configured schema.
          await client.query(`set local search_path to ${s}`);
          await client.query(m.sql);
          await client.query(`insert into ${s}.migrations (id, name) values ($1::int, $2::text)`, [
            m.id,
            m.name,
          ]);
          await client.query("commit");
        } catch (error) {
          await client.query("rollback");
          throw new Error(`migration ${m.name} failed`, { cause: error });
        }
        applied.push(m.name);
      }
      // The day partitions of event bodies for the week ahead (migration 010): a deploy that runs `migrate` keeps
      // them made even where the running processes may not change the schema.
      await client.query(`select ${s}.make_body_partitions(now(), 8)`);
    } finally {
      await client.query("select pg_advisory_unlock(hashtext('hookledger.migrate'), hashtext($1::text))", [
        schema,
      ]);
    }
  } catch (error) {
    broken = error as Error;
    throw error;
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
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
