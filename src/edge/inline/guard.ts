import { claimFailureMessage } from "../claim-failure.js";
import { type Answer, answerError, answerJson } from "../../errors.js";
import { admitDelivery } from "../admit.js";
import type { Source } from "../receiver.js";
import { withDeadline } from "../deadline.js";
import { keptHeaders } from "../headers.js";
import type { EdgeObserver } from "../observer.js";
import type { LedgerContext, Queryable } from "../../ledger/context.js";
import { claimInline, type InlineClaimResult } from "../../ledger/inline-claim.js";
import { failInline } from "../../ledger/inline-finish.js";
import type { Logger } from "../../log.js";
import { resolveInlineMode } from "./mode.js";
import { leasedTicket, wouldSkipTicket } from "./ticket.js";
import type { InlineAdmission, InlineGuard, InlineMode } from "./types.js";

/**
 * Options of {@link createInlineGuard}.
 *
 * @example
 * const options: InlineGuardOptions = { sources, db: pool, ledger: ledgerContext(), log, mode: "shadow", leaseMs: 120_000 };
 */
export interface InlineGuardOptions {
  /** The sources this guard verifies, as the receiver takes them. */
  readonly sources: readonly Source[];
  /** The pool claims run on (role `ingest`). */
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly log: Logger;
  /**
   * `shadow` runs the handler for every delivery and counts duplicates as would-skip; `enforce` answers duplicates
   * 200 without it. Switching needs no data migration.
   * @defaultValue `HOOKLEDGER_MODE`, else "shadow"
   */
  readonly mode?: InlineMode;
  /**
   * How long a claimed event belongs to the handler running it. A delivery of the event within the lease is a
   * duplicate; after it (the handler failed, or its process died) the delivery runs the event again. Choose it
   * longer than the handler's slowest run: a run that outlives its lease may overlap a retry.
   * @defaultValue 60000
   */
  readonly leaseMs?: number;
  /** The clock for timestamp windows. @defaultValue Date.now */
  readonly now?: () => number;
  /** Hears every answered delivery (metrics, `createStatsObserver`). */
  readonly observer?: EdgeObserver;
  /**
   * A claim not committed by then answers 503 so the provider retries (docs/architecture.md §4).
   * @defaultValue 1800
   */
  readonly claimDeadlineMs?: number;
}

/**
 * Creates the inline guard of docs/architecture.md §7 for apps that process inside their webhook route: it verifies over the
 * raw bytes and claims the event as an `inline` row leased to this run, then lets the app's own handler run. A
 * duplicate is answered `{"status":"duplicate"}` without the handler (`enforce`) or passed on as would-skip
 * (`shadow`). A run that fails, or whose process dies, leaves its lease to run out, and the provider's next
 * delivery of the event claims it again: it is never answered as a duplicate once the lease is over.
 *
 * @example
 * const guard = createInlineGuard({ sources: config.sources, db: ingestPool, ledger: ledgerContext(), log });
 * http.createServer(createNodeGuard(guard, existingHandler, { source: "stripe" })).listen(3000);
 */
export function createInlineGuard(options: InlineGuardOptions): InlineGuard {
  const sources = new Map(options.sources.map((s) => [s.name, s]));
  const mode = resolveInlineMode(options.mode);
  const leaseMs = options.leaseMs ?? 60_000;
  // The lease travels as an int4 of milliseconds (up to about 24 days).
  if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > 2_147_483_647) {
    throw new Error(
      `leaseMs must be a positive whole number of milliseconds up to 2147483647, got ${leaseMs}`,
    );
  }
  const now = options.now ?? Date.now;
  const deadlineMs = options.claimDeadlineMs ?? 1800;
  const { db, ledger, log } = options;
  const observer = options.observer ?? { delivery: () => {} };
  const refuse = (answer: Answer): InlineAdmission => ({ proceed: false, answer });

  return {
    mode,
    async admit(delivery): Promise<InlineAdmission> {
      const source = sources.get(delivery.source);
      if (!source) {
        observer.delivery({ source: delivery.source, result: "unknown_source" });
        return refuse(answerError("unknown_source"));
      }
      const admitted = await admitDelivery(source, delivery, now(), log);
      if (!admitted.ok) {
        observer.delivery({
          source: source.name,
          result: admitted.result,
          ...(admitted.reason !== undefined && { reason: admitted.reason }),
        });
        return refuse(admitted.answer);
      }
      if ("reply" in admitted) {
        observer.delivery({ source: source.name, result: "handshake" });
        return refuse(admitted.reply);
      }
      const { event } = admitted;
      const fields = { source: source.name, eventId: event.dedupeKey, type: event.type, mode };
      const claimStarted = performance.now();
      let claim: InlineClaimResult;
      try {
        const claiming = claimInline(
          db,
          ledger,
          {
            source: source.name,
            event,
            body: admitted.bytes,
            headers: keptHeaders(delivery.headers),
            secretIndex: admitted.secretIndex,
          },
          leaseMs,
        );
        claim = await withDeadline(claiming, deadlineMs, (late) => {
          // Answered 503, yet claimed: end the lease at once so the provider's retry runs the event instead of
          // finding an unexpired lease and being answered as a duplicate.
          const result = late.result;
          log.warn({ ...fields, late: result?.status ?? late.error }, "claim finished after its 503");
          if (result && result.status !== "duplicate") {
            const hold = { source: source.name, dedupeKey: result.id, lease: result.lease };
            failInline(db, ledger, hold, "the claim committed after its 503 answer", {
              countAttempt: false,
            }).catch((error: Error) =>
              log.error({ ...fields, err: error.message }, "could not release a claim that committed late"),
            );
          }
        });
      } catch (error) {
        observer.delivery({ source: source.name, result: "unavailable" });
        log.error({ ...fields, err: (error as Error).message }, claimFailureMessage(error, options.ledger));
        return refuse(answerError("unavailable"));
      }
      const claimSeconds = (performance.now() - claimStarted) / 1000;

      if (claim.status === "duplicate") {
        const wouldSkip = mode === "shadow";
        observer.delivery({
          source: source.name,
          result: "duplicate",
          claimSeconds,
          ...(claim.bodyMismatch && { bodyMismatch: true }),
          ...(wouldSkip && { wouldSkip }),
        });
        const logged = { ...fields, eventId: claim.id, result: wouldSkip ? "would_skip" : "duplicate" };
        if (claim.bodyMismatch) log.warn(logged, "duplicate delivery with a different body than the first");
        log.info(
          logged,
          wouldSkip ? "duplicate delivery passed to the handler (shadow mode)" : "delivery received",
        );
        // A 200 now would be final for the provider, yet the run holding the lease may still fail (its provider
        // connection may already have timed out): ask for a retry until that run has settled or let go.
        if (!wouldSkip && claim.inFlight) return refuse(answerError("in_flight"));
        if (!wouldSkip) return refuse(answerJson(200, { status: "duplicate", id: claim.id }));
        return {
          proceed: true,
          ticket: wouldSkipTicket({ db, ledger, log, fields: logged }, source.name, event),
        };
      }

      const retry = claim.status === "taken_over";
      observer.delivery({ source: source.name, result: "accepted", claimSeconds, ...(retry && { retry }) });
      const logged = { ...fields, eventId: claim.id, result: retry ? "retry" : "accepted" };
      log.info(
        {
          ...logged,
          secretIndex: admitted.secretIndex,
          ...(claim.status === "taken_over" && { attempts: claim.attempts }),
        },
        retry ? "delivery takes over an event whose lease ran out" : "delivery received",
      );
      const hold = { source: source.name, dedupeKey: claim.id, lease: claim.lease };
      return {
        proceed: true,
        ticket: leasedTicket({ db, ledger, log, fields: logged }, source.name, event, hold),
      };
    },
  };
}
