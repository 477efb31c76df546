import { type Answer, answerError, answerJson } from "../errors.js";
import { claimEvent } from "../ledger/claim.js";
import type { LedgerContext, Queryable } from "../ledger/context.js";
import { notifyThrottle } from "../ledger/notify.js";
import type { Logger } from "../log.js";
import type { HeaderBag, Provider } from "../providers/types.js";
import { readCapped } from "./body.js";
import { keptHeaders } from "./headers.js";

/** One configured inbound endpoint, resolved: its provider, its secrets and its limits. */
export interface Source {
  /** The name in the URL: `POST /webhooks/:name`. */
  readonly name: string;
  readonly provider: Provider;
  /** Every active secret; any may match (rotation). */
  readonly secrets: readonly string[];
  /** Bodies over this many bytes are refused with 413 before they are buffered. */
  readonly maxBodyBytes: number;
}

/** Everything the edge needs; adapters only convert their framework's request into a {@link Delivery}. */
export interface ReceiverOptions {
  readonly sources: readonly Source[];
  /** The pool claims run on (role `ingest`). */
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly log: Logger;
  /** The clock for timestamp windows. @defaultValue Date.now */
  readonly now?: () => number;
  /**
   * A claim not committed by then answers 503 so the provider retries (DESIGN.md §4: within 2 s).
   * @defaultValue 1800
   */
  readonly claimDeadlineMs?: number;
  /**
   * At most one claim per window carries the workers' wake-up NOTIFY; a trailing one announces the rest (see
   * `notifyThrottle`). Larger windows add up to that much pickup latency; polling still backs it.
   * @defaultValue 50
   */
  readonly wakeupWindowMs?: number;
}

/** One delivery, framework-neutral. */
export interface Delivery {
  readonly method: string;
  /** The source name taken from the route. */
  readonly source: string;
  readonly headers: HeaderBag;
  /** The raw body as it streams in; read once. */
  readonly body: AsyncIterable<Uint8Array> | null;
}

/** The edge: verify, claim, answer. */
export interface Receiver {
  /** Answers one delivery; never throws. */
  receive(delivery: Delivery): Promise<Answer>;
}

class DeadlineError extends Error {}

/**
 * Creates the framework-neutral edge of DESIGN.md §2 and §4: size cap, verification over the raw bytes, the
 * claim, and the answer. Nothing is written unless the delivery verified and parsed.
 *
 * @example
 * const receiver = createReceiver({ sources, db: pool, ledger: ledgerContext(), log: createLogger() });
 * const answer = await receiver.receive({ method: "POST", source: "stripe", headers, body });
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  const sources = new Map(options.sources.map((s) => [s.name, s]));
  const now = options.now ?? Date.now;
  const deadlineMs = options.claimDeadlineMs ?? 1800;
  const log = options.log;
  const wakeups = notifyThrottle(options.db, options.ledger, log, options.wakeupWindowMs);

  return {
    async receive(delivery) {
      const started = performance.now();
      const source = sources.get(delivery.source);
      if (!source) return answerError("unknown_source");
      if (delivery.method !== "POST") return answerError("method_not_allowed");
      const encoding = delivery.headers.get("content-encoding");
      if (encoding && encoding.trim().toLowerCase() !== "identity")
        return answerError("unsupported_encoding");
      const declared = delivery.headers.get("content-length");
      if (declared !== null && Number(declared) > source.maxBodyBytes)
        return answerError("payload_too_large");

      let read: Awaited<ReturnType<typeof readCapped>>;
      try {
        read = await readCapped(delivery.body, source.maxBodyBytes);
      } catch (error) {
        log.warn({ source: source.name, err: (error as Error).message }, "request body could not be read");
        return answerError("malformed", "the request body could not be read");
      }
      if (!read.ok) return answerError("payload_too_large");

      const verified = source.provider.verify({
        body: read.bytes,
        headers: delivery.headers,
        secrets: source.secrets,
        now: now(),
      });
      if (!verified.ok) {
        const fields = { source: source.name, reason: verified.reason };
        if ("detail" in verified) {
          log.info({ ...fields, result: "malformed" }, "delivery refused");
          return answerError("malformed", verified.detail);
        }
        log.warn({ ...fields, result: "unauthorized" }, "delivery refused");
        return answerError("unauthorized");
      }

      const { event } = verified;
      let timer: NodeJS.Timeout | undefined;
      try {
        const notify = wakeups.claimNotifies();
        const claim = claimEvent(options.db, options.ledger, {
          source: source.name,
          event,
          body: read.bytes,
          headers: keptHeaders(delivery.headers),
          secretIndex: verified.secretIndex,
          arrivedVia: "delivery",
          notify,
        });
        let late = false;
        // The ingest session's statement_timeout cancels a claim soon after the deadline; should one commit in
        // the gap anyway, the provider's retry is a duplicate and the event is still processed once. Either way
        // the late outcome is logged with the event id.
        claim.then(
          (r) =>
            late &&
            log.warn(
              { source: source.name, eventId: r.id, result: r.status },
              "claim finished after its 503",
            ),
          (error: Error) =>
            late &&
            log.warn(
              { source: source.name, eventId: event.dedupeKey, err: error.message },
              "claim failed after its 503",
            ),
        );
        const deadline = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            late = true;
            reject(new DeadlineError(`claim took over ${deadlineMs} ms`));
          }, deadlineMs);
        });
        const result = await Promise.race([claim, deadline]);
        if (!notify && result.status === "accepted") wakeups.committedQuietly();
        log.info(
          {
            source: source.name,
            eventId: result.id,
            type: event.type,
            result: result.status,
            secretIndex: verified.secretIndex,
            durationMs: Math.round(performance.now() - started),
          },
          "delivery received",
        );
        return answerJson(200, result);
      } catch (error) {
        log.error(
          { source: source.name, eventId: event.dedupeKey, type: event.type, err: (error as Error).message },
          "claim failed; answering 503 so the provider retries",
        );
        return answerError("unavailable");
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
