// Every contender works in a fresh schema of its own, dropped when it ends, and by the SIGINT handler for the ones
// still there.
import { randomBytes } from "node:crypto";
import type pg from "pg";

const created = new Set<string>();

/**
 * A new schema name `bench_<tag>_<random>`, remembered until {@link dropSchema}; created unless `create` is false
 * (hookledger's migrations and graphile-worker's create their own).
 *
 * @example
 * const schema = await freshSchema(admin, "naive");
 */
export async function freshSchema(db: pg.ClientBase | pg.Pool, tag: string, create = true): Promise<string> {
  const schema = `bench_${tag.replace(/[^a-z0-9]/g, "")}_${randomBytes(4).toString("hex")}`;
  created.add(schema);
  if (create) await db.query(`create schema ${schema}`);
  return schema;
}

/**
 * Drops a schema made by {@link freshSchema}, with everything in it.
 *
 * @example
 * await dropSchema(admin, schema);
 */
export async function dropSchema(db: pg.ClientBase | pg.Pool, schema: string): Promise<void> {
  await db.query(`drop schema if exists ${schema} cascade`);
  created.delete(schema);
}

/**
 * Drops every schema {@link freshSchema} made that is still there; reports failures and goes on.
 *
 * @example
 * await dropAllSchemas(admin);
 */
export async function dropAllSchemas(db: pg.ClientBase | pg.Pool): Promise<void> {
  for (const schema of [...created]) {
    try {
      await dropSchema(db, schema);
    } catch (error) {
      console.error(`cleanup: dropping schema ${schema} failed: ${(error as Error).message}`);
    }
  }
}
