import type { LedgerContext, Queryable } from "../ledger/context.js";
import {
  endForwardAttempt,
  type ForwardCall,
  type ForwardEnd,
  type TakenForward,
  takeForwards,
} from "../ledger/forward-take.js";
import { recordForwardsSent, type SentForward } from "../ledger/forward-sent.js";
import type { Logger } from "../log.js";
import { RefusedAddressError } from "../outbound/address.js";
import { type EngineQueue, lostAttemptsError } from "../outbound/engine.js";
import { grouped } from "../outbound/group.js";
import { postOnce, retryAfterMs } from "../outbound/http.js";
import { delayAfter } from "../worker/backoff.js";
import { defaultBreaker, type ResolvedForward, standardHeaders } from "./destination.js";

/**
 * How one attempt of a forward ended, for metrics: `sent`, `retry`, `dead`, `disabled` (the destination answered
 * 410), `stale` (not sent: a newer version of its entity went first), `given-back` (the process stopped mid-call) or
 * `lost` (its lease ran out and another attempt took it).
 *
 * @example
 * startWorker({ ...options, onForward: (r) => r.result === "disabled" && page(`${r.source} destination is gone`) });
 */
export interface ForwardReport {
  readonly source: string;
  readonly result: "sent" | "retry" | "dead" | "disabled" | "stale" | "given-back" | "lost";
  readonly attempt: number;
  readonly status: number | null;
  readonly ms: number;
}

/** What the forward queue needs. */
export interface ForwardQueueDeps {
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  /** The `forward` of each source, by name: the sources whose forwards this process sends. */
  readonly forwards: ReadonlyMap<string, ResolvedForward>;
  readonly log: Logger;
  readonly onForward?: (report: ForwardReport) => void;
}

// Statuses the Standard Webhooks spec names as "slow down": their Retry-After is honoured. Every other non-2xx is a
// failure retried with backoff, 410 aside (the destination is gone: it is disabled).
const BACK_OFF = new Set([429, 502, 503, 504]);

/**
 * The forwards as the delivery engine's queue: takes due forwards of the configured sources (never two of one
 * ordered entity, none of a disabled or paused destination), POSTs each with the provider's bytes and Standard
 * Webhooks headers, and records the attempt.
 *
 * @example
 * const engine = startDeliveryEngine({ name: "forward", queue: forwardQueue({ db: pool, ledger, forwards, log }), … });
 */
export function forwardQueue(deps: ForwardQueueDeps): EngineQueue<TakenForward> {
  const { forwards, log } = deps;
  const sources = [...forwards.keys()];
  // The lease outlasts the longest call's timeout by 5 s (see outbox/deliver.ts): past it another process may call
  // again, under the same webhook-id, and only the newer attempt records.
  const recordSent = grouped(
    (sent: readonly SentForward[]) => recordForwardsSent(deps.db, deps.ledger, sent),
    256,
  );
  const leaseMs = Math.max(0, ...[...forwards.values()].map((f) => f.timeoutMs)) + 5_000;
  return {
    take: (limit) => takeForwards(deps.db, deps.ledger, { sources, limit, leaseMs }),
    async deliver(m, stop) {
      const forward = forwards.get(m.source);
      const started = performance.now();
      const end: ForwardEnd = !forward
        ? { kind: "given-back" }
        : m.stale
          ? { kind: "stale" }
          : await attempt(forward, m, stop);
      const recording =
        end.kind === "sent"
          ? recordSent({ message: m, call: end.call })
          : endForwardAttempt(deps.db, deps.ledger, m, end, forward?.breaker ?? defaultBreaker);
      const recorded = await recording.catch((error: Error) => {
        log.error(
          { err: error.message, source: m.source, eventId: m.dedupeKey },
          "could not record a forward",
        );
        return false;
      });
      const fields = { source: m.source, eventId: m.dedupeKey, attempt: m.attempts };
      const status = "call" in end ? end.call.status : null;
      if (end.kind === "dead") log.error({ ...fields, err: end.call.error, status }, "forward dead");
      else if (end.kind === "disable")
        log.error({ ...fields, status }, "destination answered 410: forwarding disabled until re-enabled");
      else if (end.kind === "retry")
        log.warn(
          { ...fields, err: end.call.error, status, retryInMs: Math.round(end.inMs) },
          "forward failed; retrying",
        );
      const result = !recorded ? "lost" : end.kind === "disable" ? "disabled" : end.kind;
      try {
        deps.onForward?.({
          source: m.source,
          result,
          attempt: m.attempts,
          status,
          ms: performance.now() - started,
        });
      } catch (error) {
        log.warn({ ...fields, err: (error as Error).message }, "onForward threw");
      }
    },
  };

  async function attempt(forward: ResolvedForward, m: TakenForward, stop: AbortSignal): Promise<ForwardEnd> {
    const { retry } = forward;
    if (m.attempts > retry.maxAttempts) {
      const error = lostAttemptsError(m.attempts);
      return { kind: "dead", call: { status: null, ms: 0, error, snippet: null } };
    }
    const started = performance.now();
    const failed = (
      error: string,
      status: number | null,
      snippet: string | null,
      wait?: number,
    ): ForwardEnd => {
      const call: ForwardCall = { status, ms: performance.now() - started, error, snippet };
      if (m.attempts >= retry.maxAttempts) return { kind: "dead", call };
      return { kind: "retry", inMs: delayAfter(retry, m.attempts, wait), call };
    };
    try {
      const answer = await postOnce({
        url: forward.url,
        headers: {
          "content-type": "application/json",
          "user-agent": "hookledger",
          ...standardHeaders(forward.keys, m.idempotencyKey, m.body, new Date()),
          "hookledger-source": m.source,
          "hookledger-provider": m.provider,
          "hookledger-event-type": m.type,
          "hookledger-event-id": m.dedupeKey,
          "hookledger-attempt": String(m.attempts),
        },
        body: m.body,
        timeoutMs: forward.timeoutMs,
        signal: stop,
        rules: forward.rules,
      });
      const call: ForwardCall = {
        status: answer.status,
        ms: answer.ms,
        error: null,
        snippet: answer.snippet,
      };
      if (answer.status >= 200 && answer.status < 300) return { kind: "sent", call };
      if (answer.status === 410) return { kind: "disable", call: { ...call, error: "HTTP 410 Gone" } };
      const redirect = answer.status >= 300 && answer.status < 400 ? " (redirects are not followed)" : "";
      const wait = BACK_OFF.has(answer.status) ? retryAfterMs(answer.headers["retry-after"]) : undefined;
      return failed(`HTTP ${answer.status}${redirect}`, answer.status, answer.snippet, wait);
    } catch (thrown) {
      if (stop.aborted) return { kind: "given-back" };
      const error = thrown instanceof Error ? thrown : new Error(String(thrown));
      // The same address is refused on every attempt: no retry can succeed.
      if (error instanceof RefusedAddressError) {
        return {
          kind: "dead",
          call: { status: null, ms: performance.now() - started, error: error.message, snippet: null },
        };
      }
      return failed(error.message || error.name, null, null);
    }
  }
}
