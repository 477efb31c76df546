import type { Logger } from "../log.js";
import type { LedgerContext, Queryable } from "../ledger/context.js";
import {
  type AttemptEnd,
  endOutboxAttempt,
  takeOutboxMessages,
  type TakenMessage,
} from "../ledger/outbox-take.js";
import { type EngineQueue, lostAttemptsError } from "../outbound/engine.js";
import { type Outbox, SendError } from "./outbox.js";

/**
 * How one attempt of an outbox message ended, for metrics: `sent`, `retry` (due again), `dead`, `given-back` (the
 * process stopped mid-call; not counted) or `lost` (its lease ran out and another attempt took the message: this
 * one's end was not recorded).
 *
 * @example
 * startWorker({ ...options, onOutboxSend: (r) => r.result === "dead" && page(`${r.sender} message dead`) });
 */
export interface OutboxSendReport {
  readonly sender: string;
  readonly source: string;
  readonly result: "sent" | "retry" | "dead" | "given-back" | "lost";
  readonly attempt: number;
  readonly ms: number;
}

/** What the outbox's queue needs. */
export interface OutboxQueueDeps {
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly outbox: Outbox;
  readonly log: Logger;
  readonly onSend?: (report: OutboxSendReport) => void;
}

/** Rejects when `signal` aborts: a sender that ignores its signal does not hold the attempt past its timeout. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () =>
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}

function statusOf(result: unknown): number | undefined {
  const status = (result as { status?: unknown } | null | undefined)?.status;
  return typeof status === "number" ? status : undefined;
}

/**
 * The outbox as the delivery engine's queue: takes due messages of the senders this process has, leased for the
 * call's timeout plus 5 s, and runs each through its sender.
 *
 * @example
 * const engine = startDeliveryEngine({ name: "outbox", queue: outboxQueue({ db: pool, ledger, outbox, log }), … });
 */
export function outboxQueue(deps: OutboxQueueDeps): EngineQueue<TakenMessage> {
  const { outbox, log } = deps;
  const { timeoutMs, retry } = outbox.options;
  // The lease outlasts the call's timeout by 5 s, for a process that paused (GC, a stopped VM) before recording:
  // past it another process may call again, under the same idempotency key, and only the newer attempt records.
  const leaseMs = timeoutMs + 5_000;
  const names = outbox.senders();
  return {
    take: (limit) => takeOutboxMessages(deps.db, deps.ledger, { senders: names, limit, leaseMs }),
    async deliver(m, stop) {
      const started = performance.now();
      const end = await attempt(m, stop);
      const recorded = await endOutboxAttempt(deps.db, deps.ledger, m, end).catch((error: Error) => {
        // Unrecorded, the message is taken again once its lease has run out, with the same idempotency key.
        log.error(
          { err: error.message, source: m.source, eventId: m.dedupeKey, key: m.messageKey },
          "could not record an outbox send",
        );
        return false;
      });
      const result = recorded ? end.kind : "lost";
      const fields = {
        sender: m.sender,
        source: m.source,
        eventId: m.dedupeKey,
        key: m.messageKey,
        attempt: m.attempts,
      };
      if (end.kind === "dead") log.error({ ...fields, err: end.error }, "outbox message dead");
      else if (end.kind === "retry")
        log.warn(
          { ...fields, err: end.error, retryInMs: Math.round(end.inMs) },
          "outbox send failed; retrying",
        );
      deps.onSend?.({
        sender: m.sender,
        source: m.source,
        result,
        attempt: m.attempts,
        ms: performance.now() - started,
      });
    },
  };

  async function attempt(m: TakenMessage, stop: AbortSignal): Promise<AttemptEnd> {
    if (m.attempts > retry.maxAttempts) {
      return {
        kind: "dead",
        error: lostAttemptsError(m.attempts),
      };
    }
    const sender = outbox.find(m.sender);
    if (!sender)
      return {
        kind: "dead",
        error: `no outbox sender named ${JSON.stringify(m.sender)}; the senders are ${names.join(", ")}`,
      };
    const signal = AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]);
    try {
      const message = {
        sender: m.sender,
        payload: m.payload,
        source: m.source,
        eventId: m.dedupeKey,
        key: m.messageKey,
        createdAt: m.createdAt,
      };
      const call = Promise.resolve().then(() =>
        sender(message, { idempotencyKey: m.idempotencyKey, attempt: m.attempts, signal }),
      );
      call.catch(() => {});
      return { kind: "sent", status: statusOf(await Promise.race([call, aborted(signal)])) };
    } catch (thrown) {
      if (stop.aborted) return { kind: "given-back" };
      const error = thrown instanceof Error ? thrown : new Error(String(thrown));
      const text =
        signal.aborted && !(error instanceof SendError)
          ? `no answer within ${timeoutMs} ms`
          : error.message || error.name;
      const status = error instanceof SendError ? error.status : undefined;
      if ((error instanceof SendError && error.permanent) || m.attempts >= retry.maxAttempts) {
        return { kind: "dead", error: text, status };
      }
      const wait = error instanceof SendError ? error.retryAfterMs : undefined;
      return { kind: "retry", inMs: outbox.delayAfter(m.attempts, wait), error: text, status };
    }
  }
}
