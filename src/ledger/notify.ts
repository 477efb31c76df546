import type { Logger } from "../log.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";

const notifySql = statement("notify", () => "select pg_notify($1::text, '')");

/** Decides which claims carry the workers' wake-up NOTIFY. */
export interface NotifyThrottle {
  /** Asked before a claim: true when this claim's transaction should carry the NOTIFY. */
  claimNotifies(): boolean;
  /** Told after a claim committed without its own NOTIFY: a trailing one follows within the window. */
  committedQuietly(): void;
}

/**
 * Throttles wake-ups to one NOTIFY per `windowMs` per receiver. A notifying commit takes a server-wide lock and
 * holds it through its WAL flush (Postgres async.c, PreCommit_Notify), so a NOTIFY in every claim makes all claims
 * commit one at a time: the benchmark measured about a third less throughput at 64 connections. The first claim in
 * a window notifies in its own transaction; claims committed quietly after it are announced by one trailing NOTIFY
 * at the end of the window. Wake-ups are only a hint (workers also poll), and the trailing NOTIFY is sent after
 * those commits, so a worker never wakes to a row it cannot see yet.
 *
 * @example
 * const throttle = notifyThrottle(pool, ledger, log, 50);
 */
export function notifyThrottle(
  db: Queryable,
  ledger: LedgerContext,
  log: Logger,
  windowMs = 50,
): NotifyThrottle {
  let lastNotify = Number.NEGATIVE_INFINITY;
  let trailing: NodeJS.Timeout | undefined;
  return {
    claimNotifies() {
      const now = performance.now();
      if (now - lastNotify < windowMs) return false;
      lastNotify = now;
      return true;
    },
    committedQuietly() {
      if (trailing) return;
      trailing = setTimeout(() => {
        trailing = undefined;
        lastNotify = performance.now();
        db.query({ ...notifySql(ledger), values: [ledger.channel] }).catch((error: Error) =>
          log.warn(
            { err: error.message },
            "wake-up notification failed; workers will find the events by polling",
          ),
        );
      }, windowMs);
      trailing.unref();
    },
  };
}
