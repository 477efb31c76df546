import { stripeEventFromJson } from "../providers/stripe.js";
import { claimReplayed, keysInLedger, type ReplayItem, type ReplayLedger } from "./ledger.js";
import { type ProgressIO, progressBar } from "./progress.js";
import { formatCount, newReport, type ReplayReport } from "./report.js";
import {
  listStripeEvents,
  type StripeApiOptions,
  type StripeEventQuery,
  stripeWindow,
} from "./stripe-api.js";
import { postReplayed, type ReplayVia } from "./via.js";

/** Options of {@link replayStripe}. */
export interface StripeReplayOptions {
  /** The source whose ledger rows the events become (a source of provider `stripe`). */
  readonly source: string;
  readonly api: StripeApiOptions;
  /** The window's start; earlier than Stripe's 30-day retention is clamped, and the report says so. */
  readonly since: Date;
  /** @defaultValue now */
  readonly until?: Date;
  /** Event types (`*` wildcards allowed), at most 20. @defaultValue every type */
  readonly types?: readonly string[];
  /** Only events Stripe has not delivered to every endpoint (`delivery_success=false`). */
  readonly undeliveredOnly?: boolean;
  /** Claims events in this ledger (the default path); also what `dryRun` reads. */
  readonly ledger?: ReplayLedger;
  /** Re-POSTs events to a receiver's replay route instead of claiming them (no database needed). */
  readonly via?: ReplayVia;
  /** Fetch and classify against `ledger`, write nothing. */
  readonly dryRun?: boolean;
  /** Draws progress bars when it is a terminal. */
  readonly io?: ProgressIO;
  /** @defaultValue Date.now() */
  readonly now?: number;
}

const QUIET: ProgressIO = { out() {}, isTTY: false };

/**
 * Replays a window of Stripe events (docs/architecture.md §8): lists them with the official SDK, oldest first, finds the ones
 * the ledger already holds, and claims the others with `arrivedVia: "replay"` (or re-POSTs every event with the
 * replay token when `via` is given). Rows replayed into the ledger keep the API's rendering of the event (rendered
 * at the event's creation API version), not the bytes of the original delivery. Throws when Stripe cannot be read;
 * nothing is written then.
 *
 * @example
 * const report = await replayStripe({
 *   source: "stripe", api: { apiKey: process.env.STRIPE_API_KEY! },
 *   since: new Date(Date.now() - 3_600_000), ledger: { db: pool, ledger: ledgerContext() },
 * });
 * console.log(report.new, "events were missing");
 */
export async function replayStripe(options: StripeReplayOptions): Promise<ReplayReport> {
  const { source, io = QUIET } = options;
  const now = options.now ?? Date.now();
  const dryRun = options.dryRun === true;
  if (!options.ledger && (dryRun || !options.via)) {
    throw new Error("replayStripe needs `ledger` (to claim or to classify) unless `via` re-POSTs the events");
  }
  const report = newReport({ provider: "stripe", source, dryRun });
  const window = stripeWindow(options.since, options.until ?? new Date(now), now);
  report.window = window;
  if (window.clamped) {
    report.notes.push(
      `Stripe keeps events for 30 days: the window starts at the 30-day edge, ${window.since.toISOString()}, not ${options.since.toISOString()}`,
    );
  }
  const query: StripeEventQuery = {
    since: window.since,
    until: window.until,
    ...(options.types && { types: options.types }),
    ...(options.undeliveredOnly && { undeliveredOnly: true }),
  };
  const fetching = progressBar(io, "fetch");
  const started = Date.now();
  const events = await listStripeEvents(options.api, query, (n) => fetching.update(n));
  fetching.finish();
  report.fetched = events.length;
  report.phases.push(
    `fetch: ${formatCount(events.length)} events from ${window.since.toISOString()} to ${window.until.toISOString()} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );

  const items: ReplayItem[] = [];
  for (const event of events) {
    const parsed = stripeEventFromJson(event);
    if (!parsed.ok) {
      report.failed++;
      report.failures.push({ id: String(event.id ?? "?"), error: parsed.detail });
      continue;
    }
    items.push({ event: parsed.event, body: Buffer.from(JSON.stringify(event)) });
  }

  if (options.via && !dryRun) {
    await postReplayed(options.via, source, items, report, progressBar(io, "re-POST"));
    report.phases.push(
      `re-POST: ${formatCount(report.new)} accepted, ${formatCount(report.duplicate)} duplicates, ${formatCount(report.failed)} failed`,
    );
    return report;
  }
  const target = options.ledger as ReplayLedger;
  const present = await keysInLedger(
    target,
    source,
    items.map((i) => i.event.dedupeKey),
  );
  const missing = items.filter((i) => !present.has(i.event.dedupeKey));
  report.duplicate = items.length - missing.length;
  report.phases.push(
    `classify: ${formatCount(report.duplicate)} already in the ledger, ${formatCount(missing.length)} missing`,
  );
  if (dryRun) {
    report.new = missing.length;
    report.newIds.push(...missing.map((i) => i.event.dedupeKey));
    return report;
  }
  await claimReplayed(target, source, missing, report, progressBar(io, "apply"));
  report.phases.push(
    `apply: ${formatCount(report.new)} new, oldest first; ${formatCount(report.failed)} failed`,
  );
  return report;
}
