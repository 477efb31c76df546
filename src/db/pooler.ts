import type PgTypes from "pg";

// A pooler in transaction mode (PgBouncer's `pool_mode = transaction`, what most managed poolers run) hands each
// transaction, and each statement outside one, to whichever server connection is free: nothing a session holds
// survives from one to the next. Measured through PgBouncer 1.18 before this mode existed: a 10 s signed load at
// 32 connections got 13,054 non-2xx answers of about 21,000, its log saying `prepared statement "hookledger…pick"
// already exists` (docs/operations.md, "Behind PgBouncer"). So under a pooler hookledger's pools send every
// statement unnamed, send no settings at connect, and set what the claim and the worker rest on per transaction.

/**
 * What stands between hookledger and Postgres: `"none"` (a direct connection, or a pooler in session mode) or
 * `"transaction"` (PgBouncer's `pool_mode = transaction`, RDS Proxy, Supabase's pooler on port 6543, …).
 *
 * @example
 * createPool({ connectionString, role: "ingest", pooler: "transaction" });
 */
export type PoolerMode = "none" | "transaction";

const SETUP = Symbol("hookledger.transactionSetup");

/**
 * A `pg` Client class whose queries are sent unnamed (a named statement is prepared on one server connection and
 * asked for on another) and whose transactions get `setup` (see {@link beginOn}).
 *
 * @example
 * const Client = pooledClient(pg.Client, "; set local synchronous_commit = on");
 */
export function pooledClient(Base: typeof PgTypes.Client, setup: string): typeof PgTypes.Client {
  return class PooledClient extends Base {
    readonly [SETUP] = setup;

    // biome-ignore lint/suspicious/noExplicitAny: pg's query() has a dozen overloads; this only rewrites its config.
    override query(config: any, values?: any, callback?: any): any {
      if (
        config !== null &&
        typeof config === "object" &&
        typeof config.submit !== "function" &&
        config.name
      ) {
        const { name: _name, ...unnamed } = config;
        return super.query(unnamed, values, callback);
      }
      return super.query(config, values, callback);
    }
  };
}

/**
 * `begin` (one statement, or several separated by `;`) as sent on `client`: behind a pooler, the settings its pool's
 * sessions would have had go right after the first statement, before the caller's own `set local`s (which then win).
 * Unchanged on a client of a direct pool, whose sessions carry them already.
 *
 * @example
 * await client.query(beginOn(client, "begin read only; set local statement_timeout = 500"));
 */
export function beginOn(client: object, begin = "begin"): string {
  const setup = (client as { [SETUP]?: string })[SETUP];
  if (!setup) return begin;
  const end = begin.indexOf(";");
  return end === -1 ? `${begin}${setup}` : `${begin.slice(0, end)}${setup}${begin.slice(end)}`;
}

/**
 * The `set local` form of session settings (`name=value`, as sent at connect), for a transaction behind a pooler.
 * `default_transaction_isolation` becomes the transaction's own isolation level; settings of the connection to the
 * pooler (TCP keepalives) are left to the pooler.
 *
 * @example
 * perTransaction(["synchronous_commit=on", "statement_timeout=1500"]);
 * // "; set transaction isolation level read committed; set local synchronous_commit = on; …"
 */
export function perTransaction(settings: readonly string[]): string {
  let sql = "";
  for (const setting of settings) {
    const [name = "", value = ""] = setting.split("=");
    if (name.startsWith("tcp_keepalives_")) continue;
    sql +=
      name === "default_transaction_isolation"
        ? `; set transaction isolation level ${value.replaceAll("\\", "")}`
        : `; set local ${name} = ${value}`;
  }
  return sql;
}
