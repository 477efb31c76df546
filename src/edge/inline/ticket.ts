import { failInline, type InlineHold, settleInline } from "../../ledger/inline-finish.js";
import type { LedgerContext, Queryable } from "../../ledger/context.js";
import type { Logger } from "../../log.js";
import type { ParsedEvent } from "../../providers/types.js";
import type { InlineTicket } from "./types.js";

/**
 * What a ticket needs to end its run in the ledger and say so in the log.
 *
 * @example
 * const deps: TicketDeps = { db: pool, ledger, log, fields: { source: "stripe", eventId: "evt_1", type, mode } };
 */
export interface TicketDeps {
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly log: Logger;
  /** Logged with every line: source, eventId, type, mode. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * The ticket of a claimed (or taken over) inline event: `settle()` and `fail()` end its run, once, and only while
 * the claim's lease is still on the row. Neither throws: a ledger failure is logged with the event id, and the
 * lease then runs out, so the provider's next delivery runs the event again.
 *
 * @example
 * const ticket = leasedTicket(deps, "stripe", event, { source: "stripe", dedupeKey: claim.id, lease: claim.lease });
 */
export function leasedTicket(
  deps: TicketDeps,
  source: string,
  event: ParsedEvent,
  hold: InlineHold,
): InlineTicket {
  const { db, ledger, log, fields } = deps;
  let ended = false;
  return {
    source,
    event,
    wouldSkip: false,
    async settle() {
      if (ended) return;
      ended = true;
      try {
        const attempts = await settleInline(db, ledger, hold);
        if (attempts === undefined) {
          log.warn(
            { ...fields, result: "lease_lost" },
            "inline event not settled: its lease ran out and a later delivery took it over",
          );
        } else log.info({ ...fields, result: "settled", attempts }, "inline event settled");
      } catch (error) {
        log.error(
          { ...fields, err: (error as Error).message },
          "inline event could not be settled; a delivery after its lease runs it again",
        );
      }
    },
    async fail(error) {
      if (ended) return;
      ended = true;
      const message = errorMessage(error);
      try {
        const attempts = await failInline(db, ledger, hold, message);
        if (attempts === undefined) {
          log.warn(
            { ...fields, result: "lease_lost", err: message },
            "inline handler failed after its lease was taken over",
          );
        } else {
          log.warn(
            { ...fields, result: "failed", attempts, err: message },
            "inline handler failed; the provider's next delivery runs it again",
          );
        }
      } catch (failure) {
        log.error(
          { ...fields, err: message, ledgerError: (failure as Error).message },
          "inline handler failed and the failure could not be recorded; a delivery after its lease runs it again",
        );
      }
    },
  };
}

/**
 * The ticket of a shadow-mode duplicate: the handler runs, but the event's row belongs to its first delivery, so
 * `settle()` and `fail()` only log.
 *
 * @example
 * const ticket = wouldSkipTicket(deps, "stripe", event);
 */
export function wouldSkipTicket(deps: TicketDeps, source: string, event: ParsedEvent): InlineTicket {
  const { log, fields } = deps;
  return {
    source,
    event,
    wouldSkip: true,
    async settle() {
      log.debug({ ...fields, result: "would_skip" }, "handler finished for a duplicate (shadow mode)");
    },
    async fail(error) {
      log.warn(
        { ...fields, result: "would_skip", err: errorMessage(error) },
        "handler failed for a duplicate (shadow mode); the event's row is unchanged",
      );
    },
  };
}

/** The error's message only (never a stack or a body), trimmed and bounded like the worker's `last_error`. */
function errorMessage(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).trim().slice(0, 2000);
  return message === "" ? "the inline handler failed" : message;
}
