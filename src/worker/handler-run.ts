import type { PoolClient } from "../db/pool.js";
import type { PickedEvent } from "../ledger/pick.js";
import type { ArmGate } from "./arm-gate.js";
import type { AttemptDeps } from "./attempt.js";
import { attemptContext } from "./context.js";
import type { Handler } from "./handlers.js";
import { keepTransactionAlive } from "./heartbeat.js";

class TimeoutError extends Error {}
class AbandonedError extends Error {}

/** How the handler of one attempt ended; `ended`: it ended the batch's transaction itself. */
export type HandlerResult =
  | { ok: true; outcome: "applied" | "stale" | "ignored"; ended: boolean }
  | { ok: false; error: Error; cut: "timeout" | "abandoned" | false; ended: boolean };

/**
 * Runs the event's handler inside the batch's transaction, its queries behind the event's arm (`gate`, which opens
 * its savepoint), racing the handler timeout and the worker's abandon signal.
 *
 * @example
 * const result = await runHandler(deps, client, picked, handler);
 */
export async function runHandler(
  deps: AttemptDeps,
  client: PoolClient,
  picked: PickedEvent,
  handler: Handler,
  gate?: ArmGate,
): Promise<HandlerResult> {
  const attempt = attemptContext(client, deps.ledger, picked, { gate, senders: deps.outboxSenders });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TimeoutError(`handler exceeded ${deps.handlerTimeoutMs} ms`)),
      deps.handlerTimeoutMs,
    );
  });
  let onAbort: (() => void) | undefined;
  const abandoned = new Promise<never>((_, reject) => {
    const { signal } = deps;
    if (!signal) return;
    onAbort = () => reject(new AbandonedError("the worker stopped before the handler finished"));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  const stopBeating = keepTransactionAlive(client);
  try {
    const run = Promise.resolve().then(() => handler(attempt.ctx));
    // After a timeout the handler's own rejection has no one left to hear it; keep it from being "unhandled".
    run.catch(() => {});
    await Promise.race([run, timeout, abandoned]);
    return { ok: true, outcome: attempt.outcome(), ended: attempt.endedTransaction() };
  } catch (error) {
    const err = error instanceof Error ? error : new Error(String(error));
    const cut = err instanceof TimeoutError ? "timeout" : err instanceof AbandonedError ? "abandoned" : false;
    return { ok: false, error: err, cut, ended: attempt.endedTransaction() };
  } finally {
    stopBeating();
    attempt.end();
    clearTimeout(timer);
    if (onAbort) deps.signal?.removeEventListener("abort", onAbort);
  }
}
