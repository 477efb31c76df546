import type { LedgerContext, Queryable } from "../ledger/context.js";
import type { Logger } from "../log.js";
import type { ReplayReport } from "./report.js";
import { replayStripe } from "./stripe.js";
import type { StripeApiOptions } from "./stripe-api.js";

/** Options of {@link startReconciler}. */
export interface ReconcilerOptions {
  /** The pool claims run on. */
  readonly pool: Queryable;
  readonly ledger: LedgerContext;
  /** A source of provider `stripe`. */
  readonly source: string;
  /** A Stripe key that can read Events. Never logged. */
  readonly apiKey: string;
  /** Time between the end of one pass and the start of the next; the first pass runs at once. */
  readonly intervalMs: number;
  /**
   * How far back each pass looks. Keep it longer than the interval plus Stripe's own retries of a failing endpoint.
   * @defaultValue twice the interval, at least one hour
   */
  readonly sinceMs?: number;
  readonly log: Logger;
  /** Another API base (tests). */
  readonly apiBase?: string;
  /** Hears each finished pass (metrics, tests). */
  readonly onPass?: (report: ReplayReport) => void;
}

/**
 * Runs `reconcile stripe` on an interval inside a service: each pass lists the window's events and claims the ones
 * the ledger lacks (`arrived_via = 'replay'`), logging the missing ids. Passes never overlap; a failing pass is
 * logged and the next one runs on schedule.
 *
 * @example
 * const reconciler = startReconciler({ pool, ledger, source: "stripe", apiKey: process.env.STRIPE_API_KEY!, intervalMs: 900_000, log });
 * process.once("SIGTERM", () => reconciler.stop());
 */
export function startReconciler(options: ReconcilerOptions): { stop(): Promise<void> } {
  const { log, source } = options;
  const sinceMs = options.sinceMs ?? Math.max(2 * options.intervalMs, 3_600_000);
  const api: StripeApiOptions = {
    apiKey: options.apiKey,
    ...(options.apiBase !== undefined && { apiBase: options.apiBase }),
  };
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const pass = async () => {
    try {
      const report = await replayStripe({
        source,
        api,
        since: new Date(Date.now() - sinceMs),
        ledger: { db: options.pool, ledger: options.ledger },
      });
      const fields = { source, fetched: report.fetched, new: report.new, failed: report.failed };
      if (report.new > 0 || report.failed > 0) {
        log.warn(
          { ...fields, missing: report.newIds, failures: report.failures },
          "reconcile added missing events",
        );
      } else {
        log.info(fields, "reconcile found nothing missing");
      }
      options.onPass?.(report);
    } catch (error) {
      log.error(
        { source, err: (error as Error).message },
        "reconcile pass failed; the next one runs on schedule",
      );
    }
  };
  const schedule = (delay: number) => {
    timer = setTimeout(() => {
      running = pass().then(() => {
        if (!stopped) schedule(options.intervalMs);
      });
    }, delay);
  };
  schedule(0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
