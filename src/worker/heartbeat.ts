import type { PoolClient } from "../db/pool.js";

/**
 * How long Postgres lets an event's transaction sit idle before it ends it (`idle_in_transaction_session_timeout`),
 * whatever the handler timeout: a worker that froze (a stopped process, a paused VM, a blocked event loop) holds
 * its event's row lock and its entity's locks until then, and the event is due again right after.
 */
export const FROZEN_AFTER_MS = 30_000;

/** How often a running handler's transaction is touched, so a live handler never looks frozen. */
const BEAT_MS = 10_000;

/**
 * Keeps an event's transaction from looking idle while its handler runs: every 10 s it queues `select 1` on the
 * transaction's connection (the `pg` client runs it between the handler's own queries, never during one). A
 * worker that freezes stops beating, so Postgres ends its transaction after {@link FROZEN_AFTER_MS}; a live handler
 * that awaits something else for longer than that keeps its transaction. Returns the function that stops it.
 *
 * @example
 * const stop = keepTransactionAlive(client);
 * try { await handler(ctx); } finally { stop(); }
 */
export function keepTransactionAlive(client: PoolClient): () => void {
  const timer = setInterval(() => {
    // An aborted transaction (a handler that caught its own failed query) refuses it; the attempt reports that.
    client.query("select 1").catch(() => {});
  }, BEAT_MS);
  timer.unref();
  return () => clearInterval(timer);
}
