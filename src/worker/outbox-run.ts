import type { ClientConfig } from "pg";
import type { Pool } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import { outboxChannel } from "../ledger/outbox-write.js";
import type { Logger } from "../log.js";
import { type DeliveryEngine, startDeliveryEngine } from "../outbound/engine.js";
import { type OutboxSendReport, outboxQueue } from "../outbox/deliver.js";
import type { Outbox } from "../outbox/outbox.js";
import { listenForClaims } from "./wake.js";

/**
 * Starts the outbox's delivery engine of a worker process: woken by the NOTIFY of every commit that wrote a
 * message, polling besides.
 *
 * @example
 * const engine = startOutboxEngine({ pool, connectionString, ledger, outbox, log });
 */
export function startOutboxEngine(options: {
  readonly pool: Pool;
  readonly connectionString: string | ClientConfig;
  readonly ledger: LedgerContext;
  readonly outbox: Outbox;
  readonly log: Logger;
  readonly onSend?: ((report: OutboxSendReport) => void) | undefined;
}): DeliveryEngine {
  const waker = listenForClaims({
    connectionString: options.connectionString,
    channel: outboxChannel(options.ledger),
    log: options.log,
  });
  return startDeliveryEngine({
    name: "outbox",
    queue: outboxQueue({
      db: options.pool,
      ledger: options.ledger,
      outbox: options.outbox,
      log: options.log,
      ...(options.onSend && { onSend: options.onSend }),
    }),
    concurrency: options.outbox.options.concurrency,
    pollIntervalMs: options.outbox.options.pollIntervalMs,
    waker,
    log: options.log,
  });
}
