import type { ClientConfig } from "pg";
import type { Pool } from "../db/pool.js";
import { type ForwardReport, forwardQueue } from "../forward/deliver.js";
import type { ResolvedForward } from "../forward/destination.js";
import type { LedgerContext } from "../ledger/context.js";
import { forwardChannel } from "../ledger/forward-write.js";
import { outboxChannel } from "../ledger/outbox-write.js";
import type { Logger } from "../log.js";
import { type DeliveryEngine, type EngineQueue, startDeliveryEngine } from "../outbound/engine.js";
import { type OutboxSendReport, outboxQueue } from "../outbox/deliver.js";
import type { Outbox } from "../outbox/outbox.js";
import { listenForClaims } from "./wake.js";

/** Where a worker process's engines run: its pool, and the connection their LISTEN opens. */
export interface EngineHome {
  readonly pool: Pool;
  readonly connectionString: string | ClientConfig | null;
  readonly ledger: LedgerContext;
  readonly log: Logger;
}

// One engine per queue, woken by the NOTIFY of every commit that wrote to its queue, polling besides.
function startListening<T>(
  home: EngineHome,
  name: string,
  channel: string,
  queue: EngineQueue<T>,
  tuning: { readonly concurrency: number; readonly pollIntervalMs: number },
): DeliveryEngine {
  const waker = listenForClaims({ connectionString: home.connectionString, channel, log: home.log });
  return startDeliveryEngine({ name, queue, ...tuning, waker, log: home.log });
}

/**
 * Starts the outbox's delivery engine of a worker process.
 *
 * @example
 * const engine = startOutboxEngine({ pool, connectionString, ledger, log }, outbox);
 */
export function startOutboxEngine(
  home: EngineHome,
  outbox: Outbox,
  onSend?: (report: OutboxSendReport) => void,
): DeliveryEngine {
  const queue = outboxQueue({
    db: home.pool,
    ledger: home.ledger,
    outbox,
    log: home.log,
    ...(onSend && { onSend }),
  });
  return startListening(home, "outbox", outboxChannel(home.ledger), queue, outbox.options);
}

/**
 * Starts the forward delivery engine of a worker process, for the sources in `forwards`.
 *
 * @example
 * const engine = startForwardEngine(home, forwards, { concurrency: 32, pollIntervalMs: 1000 });
 */
export function startForwardEngine(
  home: EngineHome,
  forwards: ReadonlyMap<string, ResolvedForward>,
  tuning: { readonly concurrency: number; readonly pollIntervalMs: number },
  onForward?: (report: ForwardReport) => void,
): DeliveryEngine {
  const queue = forwardQueue({
    db: home.pool,
    ledger: home.ledger,
    forwards,
    log: home.log,
    ...(onForward && { onForward }),
  });
  return startListening(home, "forward", forwardChannel(home.ledger), queue, tuning);
}
