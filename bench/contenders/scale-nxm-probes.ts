// What the N×M phase (scale-nxm-cell.ts) samples besides CPU: client backends waiting on a lock, the deadlock
// counter, failures the processes logged, and (where pg_stat_statements is loaded) which statements took the time.
import { readFileSync } from "node:fs";
import pg from "pg";

/** A failure the processes log with its SQLSTATE or Postgres's message. */
export const SERIALIZATION = /40001|could not serialize access/;
export const DEADLOCK = /40P01|deadlock detected/;

/**
 * Samples, every 100 ms, how many client backends wait on a lock, on a connection of its own (the CPU trackers
 * share the admin's); `stop()` returns the counts.
 *
 * @example
 * const locks = lockSampler(url); await locks.start(); … const counts = await locks.stop();
 */
export function lockSampler(url: string) {
  const db = new pg.Client({ connectionString: url, application_name: "hookledger-bench-locks" });
  const counts: number[] = [];
  let timer: NodeJS.Timeout | undefined;
  let busy = Promise.resolve();
  return {
    async start() {
      await db.connect();
      timer = setInterval(() => {
        busy = busy
          .then(async () => {
            const { rows } = await db.query<{ n: number }>(
              `select count(*)::int as n from pg_stat_activity
                where backend_type = 'client backend' and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
            );
            counts.push(rows[0]?.n ?? 0);
          })
          .catch((error: Error) => console.error(`  lock sampler: ${error.message}`));
      }, 100);
    },
    async stop() {
      clearInterval(timer);
      await busy;
      await db.end().catch(() => {});
      return counts;
    },
  };
}

/**
 * pg_stat_database.deadlocks of the current database.
 *
 * @example
 * const before = await deadlockCount(admin);
 */
export async function deadlockCount(db: pg.ClientBase): Promise<number> {
  const { rows } = await db.query<{ n: string }>(
    "select deadlocks as n from pg_stat_database where datname = current_database()",
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Lines of `files` that match `pattern` (a file not there counts none).
 *
 * @example
 * countIn(logs, SERIALIZATION);
 */
export const countIn = (files: readonly string[], pattern: RegExp) =>
  files.reduce((sum, file) => {
    try {
      return (
        sum +
        readFileSync(file, "utf8")
          .split("\n")
          .filter((l) => pattern.test(l)).length
      );
    } catch {
      return sum;
    }
  }, 0);

/**
 * Resets pg_stat_statements; false where it is not installed.
 *
 * @example
 * const tracking = await resetStatements(admin);
 */
export async function resetStatements(db: pg.ClientBase): Promise<boolean> {
  try {
    await db.query("select pg_stat_statements_reset()");
    return true;
  } catch {
    return false;
  }
}

/**
 * The `n` statements of the bench's schema that took the most time since the reset: calls per event, rows, and
 * total ms, for the log (where the CPU goes).
 *
 * @example
 * log(await topStatements(admin, schema, 3000, 6));
 */
export async function topStatements(
  db: pg.ClientBase,
  schema: string,
  events: number,
  n: number,
): Promise<string> {
  const { rows } = await db.query<{ query: string; calls: string; rows: string; ms: number }>(
    `select regexp_replace(query, '\\s+', ' ', 'g') as query, calls, rows, total_exec_time as ms
       from pg_stat_statements where query like '%' || $1::text || '%' order by total_exec_time desc limit $2::int`,
    [schema, n],
  );
  return rows
    .map(
      (r) =>
        `    ${(Number(r.calls) / events).toFixed(2)} calls/event, ${(Number(r.rows) / Math.max(1, Number(r.calls))).toFixed(1)} rows/call, ${r.ms.toFixed(0)} ms: ${r.query.replaceAll(schema, "s").slice(0, 110)}`,
    )
    .join("\n");
}
