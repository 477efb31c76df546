import { type Pool, withTransaction } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";

/**
 * The worker's backlog at one instant.
 *
 * @example
 * const { due, oldestDueSeconds }: Backlog = await readBacklog(pool, ledger, 1000);
 */
export interface Backlog {
  /** Events due now (pending, or failed and past their retry time). */
  readonly due: number;
  /** How long the longest-waiting due event has been due, in seconds; 0 without a backlog. */
  readonly oldestDueSeconds: number;
}

/**
 * Options of {@link backlogReader} (and of `Metrics.trackBacklog`).
 *
 * @example
 * const options: BacklogOptions = { db: adminPool, ledger, timeoutMs: 500, log };
 */
export interface BacklogOptions {
  /** A pool of the ledger's database (the service uses its small admin pool). */
  readonly db: Pool;
  readonly ledger: LedgerContext;
  /**
   * A read not finished by then counts as failed, on the client and on the server (statement_timeout), so a slow
   * or unreachable database never holds a scrape.
   * @defaultValue 1000
   */
  readonly timeoutMs?: number;
  /** Where failed reads are reported. */
  readonly log?: Logger;
}

// The where clause is the worker's pick predicate, which is the predicate of the events_due partial index: the
// count walks an index the size of the backlog, and min(next_attempt_at) is its first entry.
const backlogSql = (s: string) => `select count(*) as due,
  coalesce(extract(epoch from now() - min(next_attempt_at)), 0)::float8 as oldest_due_seconds
from ${s}.events
where status in ('pending', 'failed') and next_attempt_at <= now()`;

/**
 * Reads the backlog once, in a read-only transaction whose `statement_timeout` is `timeoutMs`.
 *
 * @example
 * const { due, oldestDueSeconds } = await readBacklog(pool, ledger, 1000);
 */
export async function readBacklog(pool: Pool, ledger: LedgerContext, timeoutMs: number): Promise<Backlog> {
  return withTransaction(
    pool,
    async (client) => {
      const { rows } = await client.query<{ due: string; oldest_due_seconds: number }>(backlogSql(ledger.s));
      return { due: Number(rows[0]?.due ?? 0), oldestDueSeconds: rows[0]?.oldest_due_seconds ?? 0 };
    },
    { begin: `begin read only; set local statement_timeout = ${Math.max(1, Math.round(timeoutMs))}` },
  );
}

/**
 * A reader for metrics scrapes: concurrent calls share one query, a query still running from an earlier scrape is
 * joined rather than doubled, and each call resolves within `timeoutMs` — with `undefined` when the read failed or
 * took too long.
 *
 * @example
 * const read = backlogReader({ db: pool, ledger });
 * const backlog = await read(); // undefined: the database did not answer in time
 */
export function backlogReader(options: BacklogOptions): () => Promise<Backlog | undefined> {
  const timeoutMs = options.timeoutMs ?? 1000;
  let running: Promise<Backlog> | undefined;
  let current: Promise<Backlog | undefined> | undefined;
  const query = () => {
    running ??= readBacklog(options.db, options.ledger, timeoutMs).finally(() => {
      running = undefined;
    });
    return running;
  };
  const bounded = async (): Promise<Backlog | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    try {
      const backlog = await Promise.race([query(), late]);
      if (backlog === undefined) options.log?.warn({ timeoutMs }, "backlog query did not finish in time");
      return backlog;
    } catch (error) {
      options.log?.warn({ err: (error as Error).message }, "backlog query failed");
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  };
  return () => {
    current ??= bounded().finally(() => {
      current = undefined;
    });
    return current;
  };
}
