import type PgTypes from "pg";
import { pg } from "../deps.js";
import type { Logger } from "../log.js";
import { hostListClient, parseHostList } from "../db/hosts.js";
import { quoteIdent } from "../db/pool.js";

/** Wakes idle worker slots early; polling keeps running, so a lost notification only costs latency. */
export interface Waker {
  /**
   * Resolves after `ms`, or sooner when an event is claimed or `wakeAll` is called. With a `since` from
   * {@link Waker.mark}, a wake-up that came after that mark (while the caller was busy looking) ends it at once.
   */
  sleep(ms: number, since?: number): Promise<void>;
  /** A mark of the wake-ups seen so far, taken before looking for work. */
  mark(): number;
  /** Resolves every pending sleep now. */
  wakeAll(): void;
  /** Stops listening. */
  close(): Promise<void>;
}

/**
 * Listens on the ledger's channel on a dedicated connection, reconnecting after a loss; with `connectionString`
 * null (behind a transaction pooler, where LISTEN does not work) it never listens, and sleeps end at their time.
 *
 * @example
 * const waker = listenForClaims({ connectionString, channel: ledger.channel, log });
 * await waker.sleep(1000);
 */
export function listenForClaims(options: {
  connectionString: string | PgTypes.ClientConfig | null;
  channel: string;
  log: Logger;
}): Waker {
  const sleepers = new Set<() => void>();
  let wakeups = 0;
  let closed = false;
  let client: PgTypes.Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const wakeAll = () => {
    wakeups++;
    for (const wake of sleepers) wake();
    sleepers.clear();
  };

  const hosts =
    typeof options.connectionString === "string" ? parseHostList(options.connectionString) : undefined;
  const base =
    typeof options.connectionString === "string"
      ? { connectionString: hosts?.url ?? options.connectionString }
      : options.connectionString;
  const Client = hosts ? hostListClient(hosts) : pg().Client;

  const connect = async () => {
    if (closed) return;
    const c = new Client({ ...base, application_name: "hookledger-listen" });
    client = c;
    c.on("notification", wakeAll);
    c.on("error", (error) => {
      options.log.warn({ err: error.message }, "listen connection lost; polling continues");
      c.end().catch(() => {});
      scheduleReconnect();
    });
    try {
      await c.connect();
      await c.query(`listen ${quoteIdent(options.channel)}`);
      // Events claimed while the connection was down were not announced: wake everyone to look.
      wakeAll();
    } catch (error) {
      options.log.warn({ err: (error as Error).message }, "listen connection failed; polling continues");
      c.end().catch(() => {});
      scheduleReconnect();
    }
  };

  const scheduleReconnect = () => {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, 1000);
    retry.unref();
  };

  if (options.connectionString !== null) void connect();

  return {
    sleep(ms, since) {
      if (since !== undefined && since !== wakeups) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          sleepers.delete(done);
          resolve();
        }
        sleepers.add(done);
      });
    },
    mark: () => wakeups,
    wakeAll,
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      wakeAll();
      await client?.end().catch(() => {});
    },
  };
}
