import type { PoolClient } from "../db/pool.js";
import { queryAfter } from "../db/pipeline.js";
import { armedRows, armSteps, armText } from "../ledger/arm.js";
import type { LedgerContext } from "../ledger/context.js";
import type { LockedEvent } from "../ledger/pick-lock.js";

/**
 * What became of an event's arm: `idle` (its handler made no query, so nothing was sent and nothing needs undoing),
 * `armed`, `ended` (the transaction is no longer the batch's: a handler before it ended it and began another), or
 * `failed` (the arm's statements failed: an aborted transaction, a lost connection).
 */
export type ArmState =
  | { readonly kind: "idle" | "armed" | "ended" }
  | { readonly kind: "failed"; readonly error: Error & { code?: string } };

/** Sends an event's arm with its handler's first query; `ctx.tx` routes every query of the handler through it. */
export interface ArmGate {
  /** Runs a handler's query on `client` as `client.query(...args)` would, the first one behind the event's arm. */
  query(client: PoolClient, args: unknown[]): unknown;
  /** The arm's fate, once its answer came. */
  settled(): Promise<ArmState>;
}

// Fails a query in the form it was asked: a callback, a query object's own error handler, or a rejected promise.
function refuse(args: unknown[], error: Error): unknown {
  const last = args[args.length - 1];
  const first = args[0] as { submit?: unknown; handleError?: (error: Error) => void } | undefined;
  if (typeof last === "function") queueMicrotask(() => last(error));
  else if (typeof first?.submit === "function") queueMicrotask(() => first.handleError?.(error));
  else return Promise.reject(error);
  return typeof first?.submit === "function" ? first : undefined;
}

// 3B001: no such savepoint to release: a handler before this one ended the batch's transaction and began another.
const NO_SAVEPOINT = "3B001";

/**
 * The gate of one attempt. The arm travels ahead of the handler's first query, in the same round trip when `pg`
 * sends that query in the extended protocol (db/pipeline.ts), else queued just before it. Either way the handler's
 * query runs after the arm or not at all: after a failed arm the server skipped it, or the aborted transaction
 * refused it, or (the mark found another transaction) it ran in a transaction the batch rolls back. A handler that
 * never queries is never armed: it wrote nothing a commit of its own could make durable. The round trip this saves
 * was 7-12 % of the worker's CPU per event (process and backends; docs/benchmarks.md, "What the arm cost").
 *
 * @example
 * const gate = armGate(deps.ledger, entry.event, open, plans);
 * const result = await runHandler(deps, client, entry.event, handler, gate);
 * const arm = await gate.settled();
 */
export function armGate(
  ledger: LedgerContext,
  picked: Pick<LockedEvent, "batch" | "slot" | "source" | "dedupe_key">,
  release: boolean,
  plans: string | undefined,
): ArmGate {
  let state: Promise<ArmState> | undefined;
  // Set once the arm came back unarmed: the handler's later queries are refused rather than run where nothing lasts.
  let unarmed: ArmState | undefined;
  const fromRows = (rows: number | null): ArmState => ({ kind: rows === 1 ? "armed" : "ended" });
  const fromError = (error: Error & { code?: string }): ArmState =>
    error.code === NO_SAVEPOINT ? { kind: "ended" } : { kind: "failed", error };
  const refused = (arm: ArmState) =>
    new Error(
      arm.kind === "ended"
        ? `${picked.source}/${picked.dedupe_key}: an earlier handler of the batch ended its transaction; this event runs again later`
        : `${picked.source}/${picked.dedupe_key}: the event could not be armed: ${arm.kind === "failed" ? arm.error.message : arm.kind}`,
    );
  const note = (arm: ArmState): ArmState => {
    if (arm.kind !== "armed") unarmed = arm;
    return arm;
  };
  return {
    query(client, args) {
      const plain = () => (client.query as (...a: unknown[]) => unknown).apply(client, args);
      if (unarmed) return refuse(args, refused(unarmed));
      if (state) return plain();
      const sent = queryAfter(client, armSteps(ledger, picked, release, plans), args);
      if (sent) {
        const arm = sent.ahead.then((ahead) =>
          note(ahead.ok ? fromRows(ahead.rowCount) : fromError(ahead.error)),
        );
        state = arm;
        // The handler hears of a failed arm rather than of the skipped query, and never gets an answer from a
        // transaction that is not its batch's.
        return sent.result.then(
          async (value) => {
            const settled = await arm;
            if (settled.kind !== "armed") throw refused(settled);
            return value;
          },
          async (error: unknown) => {
            const settled = await arm;
            throw settled.kind === "armed" ? error : refused(settled);
          },
        );
      }
      state = (client.query(armText(ledger, picked, release, plans)) as Promise<unknown>).then(
        (results) => note(fromRows(armedRows(results))),
        (error: Error) => note(fromError(error)),
      );
      return plain();
    },
    settled: () => state ?? Promise.resolve({ kind: "idle" }),
  };
}
