import type { Answer } from "../../errors.js";
import type { Delivery } from "../receiver.js";
import type { ParsedEvent } from "../../providers/types.js";

/**
 * How the inline guard treats duplicates (docs/architecture.md §7). `shadow`: every delivery still reaches the app's handler
 * and duplicates are only logged and counted as would-skip; `enforce`: duplicates are answered 200 without calling
 * the handler. One setting or `HOOKLEDGER_MODE`; no data migration between the two.
 */
export type InlineMode = "shadow" | "enforce";

/** A verified, claimed delivery that the app's existing handler may now process. */
export interface InlineTicket {
  readonly source: string;
  readonly event: ParsedEvent;
  /** True in shadow mode when the delivery is a duplicate (the handler runs anyway; it would have been skipped). */
  readonly wouldSkip: boolean;
  /** The app's handler finished: the event settles `applied` (no-op for a would-skip duplicate). */
  settle(): Promise<void>;
  /** The app's handler failed: the event is marked failed, so the provider's next retry claims it again. */
  fail(error: unknown): Promise<void>;
}

/** What the guard decided for one delivery. */
export type InlineAdmission =
  | { readonly proceed: false; readonly answer: Answer }
  | { readonly proceed: true; readonly ticket: InlineTicket };

/**
 * The framework-neutral inline guard: verify and claim, then let the app's own handler run.
 *
 * @example
 * const admission = await guard.admit(delivery);
 * if (!admission.proceed) return send(admission.answer);
 * try { await existingHandler(admission.ticket.event.payload); await admission.ticket.settle(); }
 * catch (error) { await admission.ticket.fail(error); throw error; }
 */
export interface InlineGuard {
  readonly mode: InlineMode;
  admit(delivery: Delivery): Promise<InlineAdmission>;
}
