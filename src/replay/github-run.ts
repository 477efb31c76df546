import type { LedgerContext, Queryable } from "../ledger/context.js";
import { type GithubDeliveriesApi, type GithubDelivery, GithubApiError } from "./github-api.js";
import { type ProgressIO, progressBar } from "./progress.js";
import { formatCount, newReport, type ReplayReport } from "./report.js";
import { keysInLedger } from "./ledger.js";

/** A delivery guid `replay github` asked GitHub (or, in a dry run, would ask) to redeliver. */
export interface RedeliveryItem {
  readonly guid: string;
  /** The attempt redelivered: the newest of the guid's failed attempts. */
  readonly deliveryId: number;
  /** e.g. `issues.opened`. */
  readonly event: string;
  readonly deliveredAt: string;
  /** The newest failed attempt's HTTP status from the receiver (0: no answer). */
  readonly statusCode: number;
  /** Why the request failed; absent when GitHub accepted it (202). */
  readonly error?: string;
}

/**
 * The shared replay report, as GitHub fills it: `fetched` counts deliveries (attempts), `guids` the distinct events
 * among them, each of which lands in exactly one of `duplicate` (already in the ledger), `deliveredOk`, `new`
 * (redelivery requested, or in a dry run, would be) and `failed`.
 *
 * @example
 * const { guids, duplicate, deliveredOk, new: requested, failed } = report;
 */
export interface GithubReplayReport extends ReplayReport {
  guids: number;
  /** Guids with an attempt answered "OK" that the ledger nevertheless lacks (pruned, or another receiver). */
  deliveredOk: number;
  readonly redeliveries: RedeliveryItem[];
}

/**
 * GitHub redelivers deliveries of the past 3 days on github.com (GitHub's REST documentation, "Redeliver a delivery
 * for a repository webhook").
 */
export const GITHUB_REDELIVERY_WINDOW_MS = 3 * 86_400_000;

/** What {@link replayGithubDeliveries} needs: the API, the ledger, where to draw progress, and the window. */
export interface GithubReplayRun {
  readonly api: GithubDeliveriesApi;
  readonly db: Queryable;
  readonly ledger: LedgerContext;
  readonly source: string;
  /**
   * Deliveries older than this end the listing (they come newest first). Clamped to GitHub's 3-day redelivery
   * window, which is also the default; the report notes a clamp.
   */
  readonly since?: Date;
  /** The clock (epoch ms) the window is measured from. @defaultValue Date.now() */
  readonly now?: number;
  /** How the operator wrote `since` (e.g. `7d`), for the clamp's note. @defaultValue since as ISO 8601 */
  readonly sinceText?: string;
  readonly dryRun: boolean;
  /** Progress bars draw here on a terminal (pass `isTTY: false` for `--json`). */
  readonly io: ProgressIO;
}

/** Per guid: how many attempts were seen, whether one was answered "OK", and the newest failed attempt. */
interface GuidAttempts {
  deliveries: number;
  ok: boolean;
  newestFailed: GithubDelivery | undefined;
}

/**
 * Lists the hook's deliveries back to `sinceMs`, groups them by guid, and asks GitHub to redeliver the newest
 * attempt of each guid that has no "OK" attempt and is not already in the ledger (nothing in a dry run).
 * Redeliveries go one at a time, as GitHub asks of integrations to stay clear of secondary rate limits.
 *
 * @example
 * const since = new Date(Date.now() - 6 * 3_600_000);
 * const report = await replayGithubDeliveries({ api, db: pool, ledger, source: "github", since, dryRun: false, io });
 */
export async function replayGithubDeliveries(run: GithubReplayRun): Promise<GithubReplayReport> {
  const report: GithubReplayReport = {
    ...newReport({ provider: "github", source: run.source, dryRun: run.dryRun }),
    guids: 0,
    deliveredOk: 0,
    redeliveries: [],
  };
  const now = run.now ?? Date.now();
  const oldest = now - GITHUB_REDELIVERY_WINDOW_MS;
  const clamped = run.since !== undefined && run.since.getTime() < oldest;
  const sinceMs = run.since === undefined || clamped ? oldest : run.since.getTime();
  report.window = { since: new Date(sinceMs), until: new Date(now), clamped };
  if (clamped) {
    report.notes.push(
      `--since ${run.sinceText ?? run.since?.toISOString()} reaches past GitHub's 3-day redelivery window: clamped to ${new Date(sinceMs).toISOString()}`,
    );
  }
  const byGuid = new Map<string, GuidAttempts>();
  const fetching = progressBar(run.io, "fetch");
  let pages = 0;
  listing: for await (const page of run.api.pages()) {
    pages++;
    for (const delivery of page) {
      if (Date.parse(delivery.delivered_at) < sinceMs) break listing;
      report.fetched++;
      let attempts = byGuid.get(delivery.guid);
      if (!attempts) {
        attempts = { deliveries: 0, ok: false, newestFailed: undefined };
        byGuid.set(delivery.guid, attempts);
      }
      attempts.deliveries++;
      if (delivery.status === "OK") attempts.ok = true;
      else attempts.newestFailed ??= delivery;
    }
    fetching.update(report.fetched);
  }
  fetching.finish();
  report.guids = byGuid.size;
  report.phases.push(
    `fetch: ${formatCount(report.fetched)} deliveries of ${formatCount(byGuid.size)} events (guids) in ${pages} page${pages === 1 ? "" : "s"}`,
  );

  // The GitHub provider's dedupe key is the X-GitHub-Delivery guid.
  const inLedger = await keysInLedger(run, run.source, [...byGuid.keys()]);
  report.duplicate = inLedger.size;
  const todo: GithubDelivery[] = [];
  for (const [guid, attempts] of byGuid) {
    if (inLedger.has(guid)) continue;
    if (attempts.ok) report.deliveredOk++;
    else if (attempts.newestFailed) todo.push(attempts.newestFailed);
  }
  // Oldest first, so a partial run has repaired the oldest losses.
  todo.reverse();
  report.phases.push(
    `compare: ${formatCount(report.duplicate)} already in the ledger, ${formatCount(report.deliveredOk)} delivered OK ` +
      `but not in the ledger, ${formatCount(todo.length)} with only failed attempts`,
  );

  const requesting = progressBar(run.io, "redeliver");
  for (const [index, delivery] of todo.entries()) {
    const item: RedeliveryItem = {
      guid: delivery.guid,
      deliveryId: delivery.id,
      event: delivery.action ? `${delivery.event}.${delivery.action}` : delivery.event,
      deliveredAt: delivery.delivered_at,
      statusCode: delivery.status_code,
    };
    try {
      if (!run.dryRun) await run.api.redeliver(delivery.id);
      report.new++;
      report.newIds.push(delivery.guid);
      report.redeliveries.push(item);
    } catch (error) {
      // A rejected token fails every request alike: stop rather than report each guid as failed.
      if (error instanceof GithubApiError && error.status === 401) throw error;
      const message = (error as Error).message;
      report.failed++;
      report.failures.push({ id: delivery.guid, error: message });
      report.redeliveries.push({ ...item, error: message });
    }
    if (!run.dryRun) requesting.update(index + 1, todo.length);
  }
  requesting.finish();
  if (!run.dryRun && todo.length > 0) {
    report.phases.push(
      `redeliver: ${formatCount(report.new)} requested (GitHub re-signs and re-sends them), ${formatCount(report.failed)} failed`,
    );
  }
  return report;
}
