import { claimFailureMessage } from "./claim-failure.js";
import { type Answer, answerError } from "../errors.js";
import { claimBatcher } from "../ledger/claim-batch.js";
import type { LedgerContext, Queryable } from "../ledger/context.js";
import { notifyThrottle } from "../ledger/notify.js";
import type { Logger } from "../log.js";
import type { HeaderBag, Provider } from "../providers/types.js";
import { admitDelivery, admitOrRecall } from "./admit.js";
import { bodySha256 as bodySha256Of } from "./body.js";
import { withDeadline } from "./deadline.js";
import { type DuplicateLog, duplicateLog } from "./duplicate-log.js";
import { clientKey, type FailureLimitOptions, failureLimiter } from "./failure-limit.js";
import { keptHeaders } from "./headers.js";
import { knownBodies } from "./known-bodies.js";
import { cachedBodyHash, peekQuietly } from "./seen-lookup.js";
import type { EdgeObserver, SeenCache } from "./observer.js";

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
   * A claim not committed by then answers 503 so the provider retries (docs/architecture.md §4: within 2 s).
   * @defaultValue 1800
   */
  readonly claimDeadlineMs?: number;
  /**
   * At most one claim per window carries the workers' wake-up NOTIFY; a trailing one announces the rest (see
   * `notifyThrottle`). Larger windows add up to that much pickup latency; polling still backs it.
   * @defaultValue 50
   */
  readonly wakeupWindowMs?: number;
  /** Hears every answered delivery (metrics, statistics). */
  readonly observer?: EdgeObserver;
  /** Confirmed-duplicate short-circuit: event ids known to be committed, answered without the database. */
  readonly seen?: SeenCache;
  /**
   * The token the replay route (`POST /replay/:source`) accepts in `x-hookledger-replay-token` instead of a
   * signature. Unset or empty: every replay is refused with 401 (fail closed).
   * @defaultValue undefined
   * @example createReceiver({ ...options, replayToken: process.env.HOOKLEDGER_REPLAY_TOKEN })
   */
  readonly replayToken?: string | undefined;
  /**
   * Failed verifications per client address before they are answered 429 with `Retry-After` (docs/architecture.md
   * §4); deliveries that verify are never limited. `false` turns the limit off.
   * @defaultValue `{ maxFailures: 30, windowMs: 60_000, maxAddresses: 10_000 }`
   */
  readonly failureLimit?: FailureLimitOptions | false;
  /**
   * Count failures against the last `X-Forwarded-For` entry instead of the socket's address: set it only behind a
   * proxy that appends that header (otherwise any client picks its own address).
   * @defaultValue false
   */
  readonly trustProxy?: boolean;
  /**
   * Duplicates are logged at debug, each source's count at info once per this window (docs/architecture.md,
   * "Duplicates are logged at debug, summed up at info").
   * @defaultValue 60_000
   */
  readonly duplicateSummaryMs?: number;
}

/** One delivery, framework-neutral. */
export interface Delivery {
  readonly method: string;
  /** The source name taken from the route. */
  readonly source: string;
  readonly headers: HeaderBag;
  /** The raw body as it streams in (or bytes a raw parser already kept); read once. */
  readonly body: AsyncIterable<Uint8Array> | Iterable<Uint8Array> | null;
  /**
   * Set only by the adapters' replay route: the replay token replaces the signature check, and the row records that
   * the event arrived by replay.
   */
  readonly viaReplay?: boolean;
  /** The peer address of the connection (node adapters set it); failed verifications are counted against it. */
  readonly clientAddress?: string;
}

/** The edge: verify, claim, answer. */
export interface Receiver {
  /** Answers one delivery; never throws. */
  receive(delivery: Delivery): Promise<Answer>;
  /** The receiver's logger; adapters log through it. */
  readonly log: Logger;
}

/**
 * Creates the framework-neutral edge of docs/architecture.md §2 and §4: size cap, verification over the raw bytes, the
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
  const { log, seen } = options;
  const observer = options.observer ?? { delivery: () => {} };
  const wakeups = notifyThrottle(options.db, options.ledger, log, options.wakeupWindowMs);
  // Concurrent deliveries share one insert and one commit (docs/architecture.md §3); a lone one goes at once.
  const claims = claimBatcher({
    db: options.db,
    ledger: options.ledger,
    log,
    wakeups,
    maxWaitMs: deadlineMs,
  });
  const limiter = options.failureLimit === false ? undefined : failureLimiter(options.failureLimit);
  const duplicates = duplicateLog(log, options.duplicateSummaryMs);
  const admitOptions = { replayToken: options.replayToken };
  const bodies = knownBodies();
  // A body answered as a duplicate before carries the same event again (Provider.steps), as long as the
  // confirmed-duplicate cache still holds that event with this very body.
  const recallOptions = seen && {
    ...admitOptions,
    recall: (name: string, sha256: string) => {
      const known = bodies.get(name, sha256);
      return known && peekQuietly(seen, name, known.dedupeKey, log) === sha256 ? known : undefined;
    },
  };
  const cachedDuplicate = (name: string, eventId: string, type: string): void => {
    observer.delivery({ source: name, result: "duplicate", shortCircuit: true, eventId });
    duplicates.duplicate({ source: name, eventId, type, shortCircuit: true });
  };

  const overLimit = (delivery: Delivery): number | undefined => {
    const key = clientKey(delivery.clientAddress, delivery.headers, options.trustProxy === true);
    return key === undefined ? undefined : limiter?.fail(key, now());
  };

  return {
    log,
    async receive(delivery) {
      const started = performance.now();
      const source = sources.get(delivery.source);
      if (!source) {
        observer.delivery({ source: delivery.source, result: "unknown_source" });
        return answerError("unknown_source");
      }
      const admitted = recallOptions
        ? await admitOrRecall(source, delivery, now(), log, recallOptions)
        : await admitDelivery(source, delivery, now(), log, admitOptions);
      if (!admitted.ok) {
        const retryAfter = admitted.result === "unauthorized" ? overLimit(delivery) : undefined;
        observer.delivery({
          source: source.name,
          result: retryAfter === undefined ? admitted.result : "rate_limited",
          ...(admitted.reason !== undefined && { reason: admitted.reason }),
        });
        return retryAfter === undefined ? admitted.answer : tooManyFailures(retryAfter);
      }
      if ("reply" in admitted) {
        observer.delivery({ source: source.name, result: "handshake" });
        return admitted.reply;
      }
      if ("recalled" in admitted) {
        const { dedupeKey, type } = admitted.recalled;
        cachedDuplicate(source.name, dedupeKey, type);
        return claimAnswer("duplicate", dedupeKey);
      }
      const { event } = admitted;
      const fields = { source: source.name, eventId: event.dedupeKey, type: event.type };
      const bodySha256 = admitted.bodySha256 ?? bodySha256Of(admitted.bytes);
      // A cached id with another body goes to Postgres, which counts and reports the mismatch.
      const lookup = cachedBodyHash(seen, source.name, event.dedupeKey, log);
      if ((typeof lookup === "string" ? lookup : await lookup) === bodySha256) {
        if (source.provider.steps) {
          bodies.add(source.name, bodySha256, { dedupeKey: event.dedupeKey, type: event.type });
        }
        cachedDuplicate(source.name, event.dedupeKey, event.type);
        return event.acknowledge ?? claimAnswer("duplicate", event.dedupeKey);
      }
      const claimStarted = performance.now();
      try {
        const result = await withDeadline(
          claims.claim(
            {
              source: source.name,
              event,
              body: admitted.bytes,
              headers: keptHeaders(delivery.headers),
              secretIndex: admitted.secretIndex,
              arrivedVia: delivery.viaReplay === true ? "replay" : "delivery",
            },
            bodySha256,
          ),
          deadlineMs,
          // The ingest session's statement_timeout cancels a claim soon after the deadline; should one commit in
          // the gap anyway, the provider's retry is a duplicate and the event is still processed once.
          (late) => log.warn({ ...fields, late }, "claim finished after its 503"),
        );
        const bodyMismatch = result.status === "duplicate" && result.bodyMismatch;
        // The cache holds the stored body's hash; after a mismatch only Postgres knows it.
        if (!bodyMismatch) seen?.add(source.name, result.id, bodySha256);
        observer.delivery({
          source: source.name,
          result: result.status,
          claimSeconds: (performance.now() - claimStarted) / 1000,
          ...(bodyMismatch && { bodyMismatch }),
        });
        if (bodyMismatch) {
          log.warn(
            { ...fields, result: "duplicate" },
            "duplicate delivery with a different body than the first",
          );
        }
        logClaimed(log, duplicates, fields, result, admitted.secretIndex, started);
        return event.acknowledge ?? claimAnswer(result.status, result.id);
      } catch (error) {
        observer.delivery({ source: source.name, result: "unavailable" });
        log.error({ ...fields, err: (error as Error).message }, claimFailureMessage(error, options.ledger));
        return answerError("unavailable");
      }
    },
  };
}

// One info line per accepted event (the record that it arrived); duplicates go to the duplicate log.
function logClaimed(
  log: Logger,
  duplicates: DuplicateLog,
  fields: { readonly source: string; readonly type: string },
  result: { readonly status: "accepted" | "duplicate"; readonly id: string },
  secretIndex: number | null,
  started: number,
): void {
  if (result.status === "duplicate") {
    duplicates.duplicate({
      source: fields.source,
      eventId: result.id,
      type: fields.type,
      shortCircuit: false,
    });
    return;
  }
  log.info(
    {
      source: fields.source,
      eventId: result.id,
      type: fields.type,
      result: "accepted",
      secretIndex,
      durationMs: Math.round(performance.now() - started),
    },
    "delivery received",
  );
}

// The same bytes as answerJson(200, { status, id }), without serialising the object.
function claimAnswer(status: "accepted" | "duplicate", id: string): Answer {
  return { status: 200, headers: JSON_TYPE, body: `{"status":"${status}","id":${JSON.stringify(id)}}` };
}

const JSON_TYPE = { "content-type": "application/json; charset=utf-8" } as const;

function tooManyFailures(retryAfterSeconds: number): Answer {
  const answer = answerError("too_many_failures");
  return { ...answer, headers: { ...answer.headers, "retry-after": String(retryAfterSeconds) } };
}
