import {
  type Handlers,
  type Pool,
  silentLogger,
  startWorker,
  type Worker,
  type WorkerOptions,
} from "hookledger";
import type { TestLedger } from "./db.js";

/** What a test sets of a worker besides its ledger, handlers and (silent) log. */
export type TestWorkerOptions = Partial<
  Omit<WorkerOptions, "pool" | "connectionString" | "ledger" | "handlers" | "log">
>;

/**
 * Runs `body` with one silent worker of `t`'s ledger on `pool`, then stops the worker (10 s grace) and ends the pool,
 * whatever `body` did.
 *
 * @example
 * await withTestWorker(t, pool, handlers, { concurrency: 1 }, () => waitFor("settled", settled));
 */
export async function withTestWorker(
  t: TestLedger,
  pool: Pool,
  handlers: Handlers,
  options: TestWorkerOptions,
  body: (worker: Worker) => Promise<void>,
): Promise<void> {
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers,
    log: silentLogger(),
    ...options,
  });
  try {
    await body(worker);
  } finally {
    await worker.stop(10_000);
    await pool.end();
  }
}
