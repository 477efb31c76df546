// The Postgres backends serving a pool, found by asking each of its connections, and their CPU from /proc: the
// probes charge a pool's database work to the backends they found before the work starts.
import type { PoolClient } from "../../src/db/pool.js";
import { cpuSeconds } from "./proc.js";

/**
 * Opens `n` connections of `pool` at once (so each is its own backend) and reads each one's backend pid; the
 * clients stay checked out for the caller to use or release.
 *
 * @example
 * const { clients, pids } = await connectAll(pool, 10);
 */
export async function connectAll(
  pool: { connect(): Promise<PoolClient> },
  n: number,
): Promise<{ clients: PoolClient[]; pids: number[] }> {
  const clients = await Promise.all(Array.from({ length: n }, () => pool.connect()));
  const pids = await Promise.all(
    clients.map(async (c) => (await c.query<{ p: number }>("select pg_backend_pid() as p")).rows[0]?.p ?? 0),
  );
  return { clients, pids };
}

/**
 * The backend pids of a pool of `n` connections, opened and released back to the pool.
 *
 * @example
 * const pids = await backendPids(pool, 10); // … backendSeconds(pids) before and after the work
 */
export async function backendPids(pool: { connect(): Promise<PoolClient> }, n: number): Promise<number[]> {
  const { clients, pids } = await connectAll(pool, n);
  for (const c of clients) c.release();
  return pids;
}

/**
 * User + system CPU seconds the backends have used so far; a backend that ended counts nothing (an undercount).
 *
 * @example
 * const before = backendSeconds(pids); // … later: backendSeconds(pids) - before
 */
export function backendSeconds(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
}
