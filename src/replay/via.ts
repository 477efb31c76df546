import { REPLAY_TOKEN_HEADER } from "../edge/replay-token.js";
import type { Progress } from "./progress.js";
import type { ReplayItem } from "./ledger.js";
import type { ReplayReport } from "./report.js";

/** A receiver to re-POST to, and the replay token it accepts. */
export interface ReplayVia {
  /** The receiver's base URL; events go to `{url}/replay/{source}`. @example "https://hooks.example.com" */
  readonly url: string;
  /** The receiver's `HOOKLEDGER_REPLAY_TOKEN`. Never logged. */
  readonly token: string;
}

/**
 * The URL a source's re-POSTs go to.
 *
 * @example
 * replayUrl("https://hooks.example.com/", "stripe"); // "https://hooks.example.com/replay/stripe"
 */
export function replayUrl(base: string, source: string): string {
  return `${base.replace(/\/+$/, "")}/replay/${encodeURIComponent(source)}`;
}

/**
 * Re-POSTs each item in order (oldest first) to the receiver's replay route with the replay token, and counts the
 * receiver's answers: `accepted` → new, `duplicate` → already in the ledger, anything else → failed.
 *
 * @example
 * await postReplayed({ url, token }, "stripe", items, report, bar);
 */
export async function postReplayed(
  via: ReplayVia,
  source: string,
  items: readonly ReplayItem[],
  report: ReplayReport,
  progress: Progress,
): Promise<void> {
  const url = replayUrl(via.url, source);
  for (const [i, item] of items.entries()) {
    const id = item.event.dedupeKey;
    try {
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "hookledger-replay",
          [REPLAY_TOKEN_HEADER]: via.token,
        },
        body: Buffer.from(item.body).toString("utf8"),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await response.text();
      const status = response.ok ? (JSON.parse(text) as { status?: string }).status : undefined;
      if (status === "accepted") {
        report.new++;
        report.newIds.push(id);
      } else if (status === "duplicate") {
        report.duplicate++;
      } else {
        report.failed++;
        report.failures.push({ id, error: `the receiver answered ${response.status} ${text.slice(0, 200)}` });
      }
    } catch (error) {
      report.failed++;
      report.failures.push({ id, error: `POST ${url} failed: ${(error as Error).message}` });
    }
    progress.update(i + 1, items.length);
  }
  progress.finish();
}
