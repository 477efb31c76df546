import type PgTypes from "pg";
import { pg } from "../deps.js";
import { hostListClient, parseHostList } from "./hosts.js";
import { beginOn, type PoolerMode, perTransaction, pooledClient } from "./pooler.js";

/** A `pg` pool; hookledger uses its own pools or the app's (library mode). */
export type Pool = PgTypes.Pool;
/** A client checked out of a {@link Pool}, inside a transaction when handed to a handler. */
export type PoolClient = PgTypes.PoolClient;

/** What a pool is for: each role gets server settings that suit it. */
export type PoolRole = "ingest" | "work" | "admin";

/** Options of {@link createPool}. */
export interface CreatePoolOptions {
  /** A `postgres://` URL. @example "postgres://postgres@127.0.0.1:5432/test" */
  readonly connectionString: string;
  /** Role of the pool; decides timeouts and session settings. */
  readonly role: PoolRole;
  /** Maximum connections. @defaultValue 10 for ingest, 5 otherwise */
  readonly max?: number;
  /**
   * The server cancels a statement running longer. For the `ingest` role, so that a claim given up by the edge's
   * 1.8 s deadline (answered 503) does not commit afterwards and frees its connection; other roles only when given
   * (the dashboard's pool sets 10 s).
   * @defaultValue 1500 for ingest, none otherwise
   */
  readonly statementTimeoutMs?: number;
  /**
   * How long to wait for a connection (a new one, or a free one from the pool).
   * @defaultValue 1000 for ingest (the edge answers 503 within 2 s), 5000 otherwise
   */
  readonly connectTimeoutMs?: number;
  /**
   * With several hosts in the URL (`postgres://db1,db2/app?target_session_attrs=read-write`, as libpq reads it),
   * called with `host:port` each time new connections go to another host (a failover).
   * @example (to) => log.warn({ to }, "database host switched")
   */
  readonly onHostSwitch?: (to: string) => void;
  /**
   * `"transaction"` behind a pooler in transaction mode (PgBouncer's `pool_mode = transaction`): statements go
   * unnamed, nothing is set at connect, and the role's settings are set in each transaction `withTransaction`
   * opens; the claim then runs in an explicit transaction (docs/operations.md, "Behind PgBouncer").
   * @defaultValue "none"
   */
  readonly pooler?: PoolerMode;
}

/**
 * The setting every session of a pool made by {@link createPool} carries (besides its role's), so that a start can
 * tell whether the settings sent at connect are in effect: a pooler told to ignore the `options` startup parameter
 * drops them all without a word (db/pooler-check.ts).
 */
export const SESSION_MARK = "hookledger.session";

// Pools made by createPool, whose sessions carry the settings the claim rests on; any other pool (library mode)
// gets them per claim, in an explicit transaction (ledger/claim.ts).
const ours = new WeakSet<object>();

/**
 * Creates a pool whose sessions are set for their role. Every role pins `synchronous_commit=on` and READ COMMITTED,
 * which the claim's guarantees rest on (docs/architecture.md §3), whatever the server's defaults are.
 *
 * @example
 * const pool = createPool({ connectionString: process.env.DATABASE_URL!, role: "ingest" });
 */
export function createPool(options: CreatePoolOptions): Pool {
  const settings = ["synchronous_commit=on", "default_transaction_isolation=read\\ committed"];
  if (options.role === "ingest") {
    // The edge answers 503 after 1.8 s; the server gives up on the claim before that (a claim waiting on a lock
    // then never commits after its 503) and the connection is free again.
    const timeout = options.statementTimeoutMs ?? 1500;
    // lock_timeout also bounds the wait for the NOTIFY lock at commit, which statement_timeout does not cover.
    settings.push(`statement_timeout=${timeout}`, `lock_timeout=${timeout}`);
    // Every ingest statement is a keyed insert or lookup, which a generic plan serves as well as a custom one; left
    // to choose, Postgres planned the batched claim afresh at every execution (its arrays' sizes differ), which was a
    // third of its CPU: 75 against 49 µs per row, 64-row batches of 2 KB events (docs/architecture.md).
    settings.push("plan_cache_mode=force_generic_plan");
  }
  if (options.role !== "ingest" && options.statementTimeoutMs !== undefined) {
    settings.push(`statement_timeout=${options.statementTimeoutMs}`);
  }
  if (options.role === "work") {
    // A dead worker host leaves an open TCP connection that Postgres notices through keepalives (10 s idle + 3
    // probes 5 s apart) or the idle-in-transaction timeout the worker sets per transaction, whichever fires first.
    settings.push("tcp_keepalives_idle=10", "tcp_keepalives_interval=5", "tcp_keepalives_count=3");
  }
  if (options.role === "admin") {
    // The admin role's reads (the dashboard, stats, the CLI) are short, but some are estimated large (a LIMIT per
    // source of a recursive CTE): Postgres then JIT-compiled them, 0.5 s of compiling for a 0.1 s query on a
    // million-event ledger (docs/benchmarks.md, "The dashboard on a million events").
    settings.push("jit=off");
  }
  const hosts = parseHostList(options.connectionString);
  const pooled = options.pooler === "transaction";
  const Base = hosts ? hostListClient(hosts, options.onHostSwitch) : undefined;
  const url = hosts?.url ?? options.connectionString;
  const own = [...settings, `${SESSION_MARK}=on`].map((s) => `-c ${s}`).join(" ");
  // pg lets a URL's `options` replace the `options` given beside it: the URL's go first, so that its own settings
  // (a search_path) stay and hookledger's win where both set one.
  const theirs = pooled ? undefined : urlOptions(url);
  const pool = new (pg().Pool)({
    connectionString: theirs?.url ?? url,
    ...(pooled
      ? { Client: pooledClient(Base ?? pg().Client, perTransaction(settings)) }
      : { ...(Base && { Client: Base }), options: theirs ? `${theirs.options} ${own}` : own }),
    max: options.max ?? (options.role === "ingest" ? 10 : 5),
    keepAlive: true,
    // The ingest path must answer 503 within 2 s when the database is gone (docs/architecture.md §4).
    connectionTimeoutMillis: options.connectTimeoutMs ?? (options.role === "ingest" ? 1000 : 5000),
    application_name: `hookledger-${options.role}`,
    // A server that accepts but never answers would otherwise hold each ingest connection forever.
    ...(options.role === "ingest" && { query_timeout: 2500 }),
  });
  // An idle client whose server went away emits 'error' on the pool; without a listener that would crash the process.
  pool.on("error", () => {});
  dropReadOnlyConnections(pool);
  // Behind a pooler no session carries the claim's settings: the claim sets them in its own transaction.
  if (!pooled) ours.add(pool);
  return pool;
}

// The `options` parameter of a URL, and the URL without it; `undefined` when it has none.
function urlOptions(connectionString: string): { url: string; options: string } | undefined {
  if (!URL.canParse(connectionString)) return undefined;
  const url = new URL(connectionString);
  const options = url.searchParams.get("options");
  if (options === null) return undefined;
  url.searchParams.delete("options");
  return { url: url.toString(), options };
}

// A server that answers 25006 (read_only_sql_transaction) to a live connection was demoted, or stands behind an
// address that moved to a promoted standby: the connection would keep failing every write. It is closed when it
// goes back to the pool, whose next connection finds the writable host (a new connection to a moved address, or
// the host list's next probe: hosts.ts). pg-pool drops a client that is ending when it is released.
function dropReadOnlyConnections(pool: Pool): void {
  const demoted = new WeakSet<object>();
  pool.on("connect", (client) => {
    const connection = (client as unknown as { connection: NodeJS.EventEmitter }).connection;
    connection.on("errorMessage", (message: { code?: string }) => {
      if (message.code === "25006") demoted.add(client);
    });
  });
  pool.on("release", (_error, client) => {
    if (demoted.has(client)) client.end().catch(() => {});
  });
}

/**
 * Whether `db` is a pool made by {@link createPool}, whose sessions are pinned to READ COMMITTED and
 * `synchronous_commit=on`. The claim runs in autocommit on such a pool, and in an explicit transaction that sets
 * both on any other pool (your own `new pg.Pool()`, library mode).
 *
 * @example
 * isHookledgerPool(createPool({ connectionString, role: "ingest" })); // true
 * isHookledgerPool(new pg.Pool({ connectionString })); // false
 */
export function isHookledgerPool(db: unknown): boolean {
  return typeof db === "object" && db !== null && ours.has(db);
}

/**
 * Runs `fn` inside a transaction on a client of `pool`: commits when it resolves, rolls back when it throws, and
 * always releases. `begin` may set the transaction up in the same round trip (`begin read only; set local …`);
 * behind a pooler the pool's settings are set there too (see `createPool`'s `pooler`).
 * A statement the server refused leaves the connection usable, so it is rolled back; after any other failure (a
 * lost connection, pg's client-side `query_timeout`) a statement may still be running and a rollback would queue
 * behind it, so the connection is destroyed instead (the server then rolls back) and never returns to the pool.
 *
 * @example
 * await withTransaction(pool, (tx) => tx.query("update accounts set plan = $1 where id = $2", ["pro", 7]));
 */
export async function withTransaction<T>(
  pool: { connect(): Promise<PoolClient> },
  fn: (tx: PoolClient) => Promise<T>,
  options: { begin?: string } = {},
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A checked-out client's connection lost between statements emits 'error'; unheard, it would crash the process.
  // Heard, the next statement fails and the transaction is rolled back.
  const onError = (error: Error) => {
    broken = error;
  };
  client.on("error", onError);
  try {
    await client.query(beginOn(client, options.begin));
    const result = await fn(client);
    await client.query("commit");
    return result;
  } catch (error) {
    const usable = broken === undefined && (error instanceof pg().DatabaseError || !isClientFailure(error));
    if (usable) {
      await client.query("rollback").catch((rollbackError: Error) => {
        broken = rollbackError;
      });
    } else {
      broken ??= error as Error;
    }
    throw error;
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}

// pg's own failures of the connection, as opposed to an error the server sent or the caller's code threw.
function isClientFailure(error: unknown): boolean {
  return (
    error instanceof Error &&
    /timeout|Connection terminated|not queryable|ECONNRESET|EPIPE/i.test(error.message)
  );
}

/** Quotes an identifier (a schema name) for SQL text; parameters cannot carry identifiers. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
