import type { Pool, PoolClient } from "../db/pool.js";
import { beginOn } from "../db/pooler.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";
import { type EngineQueue, pollingWaker, startDeliveryEngine } from "../outbound/engine.js";
import { type RetryPolicy, retryDelay } from "../worker/backoff.js";
import { measureRules } from "./measure.js";
import { type OutgoingAlert, pruneAlertMessages, recordAlertAttempt, takeDueAlerts } from "./outbox.js";
import { sendAlert } from "./send.js";
import { recordMeasurement } from "./state.js";
import type { AlertDestination, AlertRules } from "./types.js";

// How long sent messages stay in alert_messages (docs/monitoring.md, "Alerts sent by hookledger").
const KEEP_MESSAGES_MS = 30 * 86_400_000;

/**
 * Options of {@link startAlerts}.
 *
 * @example
 * const options: AlertsOptions = { pool, ledger, sources: ["stripe"], rules: { deadLetters: { atLeast: 1 } },
 *   destinations: [{ kind: "slack", name: "slack", url: process.env.SLACK_ALERT_WEBHOOK_URL ?? "" }], everyMs: 30_000, log };
 */
export interface AlertsOptions {
  /** An `admin` or `work` pool of the ledger's database. */
  readonly pool: Pool;
  readonly ledger: LedgerContext;
  /** The sources the rules are measured for (the configured ones). */
  readonly sources: readonly string[];
  readonly rules: AlertRules;
  readonly destinations: readonly AlertDestination[];
  /** Time between the end of one evaluation and the start of the next; the first runs right away. */
  readonly everyMs: number;
  readonly log: Logger;
  /** A send not answered by then failed. @defaultValue 10_000 */
  readonly sendTimeoutMs?: number;
  /**
   * Retries of a failed send.
   * @defaultValue `{ maxAttempts: 20, baseDelayMs: 2000, maxDelayMs: 600_000 }`: about 2 hours of tries
   */
  readonly retry?: Partial<RetryPolicy>;
  /** How often queued messages are looked for besides right after a transition. @defaultValue 2000 */
  readonly pollMs?: number;
}

/** Running alerts. */
export interface Alerts {
  /** Stops evaluating and sending (a send in flight is abandoned and retried later); resolves once nothing runs. */
  stop(): Promise<void>;
}

const MAX_IN_FLIGHT = 20;

/**
 * Evaluates the alert rules on an interval and sends the messages their transitions queue (docs/monitoring.md,
 * "Alerts"). Every instance of a service may run it: each transition is recorded once in the ledger, whichever
 * instance sees it first, and each queued message is sent by one instance, again after a failure (with backoff)
 * and after a restart. Sending never holds up the next evaluation.
 *
 * @example
 * const alerts = startAlerts({ pool, ledger, sources: ["stripe"], rules: { backlogAge: { overMs: 600_000 } },
 *   destinations: [{ kind: "slack", name: "slack", url: process.env.SLACK_ALERT_WEBHOOK_URL ?? "" }],
 *   everyMs: 30_000, log });
 * await alerts.stop();
 */
export function startAlerts(options: AlertsOptions): Alerts {
  const stopping = new AbortController();
  const names = options.destinations.map((d) => d.name);
  const waker = pollingWaker();
  // The one engine that sends outward (src/outbound/engine.ts), as the outbox does: lease, call, fenced record.
  const sender = startDeliveryEngine({
    name: "alerts",
    queue: alertQueue(options),
    concurrency: MAX_IN_FLIGHT,
    pollIntervalMs: options.pollMs ?? 2000,
    waker,
    log: options.log,
  });
  const evaluator = loop(options.everyMs, stopping.signal, async () => {
    if ((await evaluate(options, names)) > 0) waker.wakeAll();
    return false;
  });
  const sweeper = loop(3_600_000, stopping.signal, async () => {
    await pruneAlertMessages(options.pool, options.ledger, KEEP_MESSAGES_MS).catch((error: Error) =>
      options.log.warn(
        { err: error.message },
        "alerts: pruning old messages failed; trying again in an hour",
      ),
    );
    return false;
  });
  return {
    async stop() {
      stopping.abort();
      // No grace: a send in flight is abandoned at once and recorded failed, due again (as before the engine).
      await Promise.all([evaluator.stop(), sweeper.stop(), sender.stop(0)]);
    },
  };
}

// Runs `step` now, then `everyMs` after each run ends; at once again when it returns true (more work waits), or
// when woken.
function loop(everyMs: number, signal: AbortSignal, step: () => Promise<boolean>) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const run = () => {
    clearTimeout(timer);
    if (signal.aborted) return;
    if (running) {
      again = true;
      return;
    }
    running = step()
      .then((more) => {
        again ||= more;
      })
      .finally(() => {
        running = undefined;
        const now = again;
        again = false;
        if (!signal.aborted) timer = setTimeout(run, now ? 0 : everyMs);
      });
  };
  run();
  return {
    wake: run,
    async stop() {
      clearTimeout(timer);
      await running;
    },
  };
}

async function evaluate(options: AlertsOptions, destinations: readonly string[]): Promise<number> {
  const { pool, ledger, log } = options;
  let client: PoolClient | undefined;
  let broken: Error | undefined;
  try {
    client = await pool.connect();
    // Evaluations of all instances take turns, and each measures after the previous one committed: an evaluation
    // that read its clock first but measured last (a slow query) would otherwise carry the newest time and the
    // oldest view, and undo a newer one's change (CI once saw a second episode resolved and fired again, five
    // instances racing). The database's clock, read under the lock, then orders them (state.ts).
    await client.query(beginOn(client));
    const { rows } = await client.query<{ at: Date }>(
      "select pg_advisory_xact_lock(hashtext('hookledger.alerts'), hashtext($1::text)), clock_timestamp() as at",
      [ledger.schema],
    );
    const evaluatedAt = rows[0]?.at ?? new Date();
    const measurements = await measureRules(client, ledger, options.rules, options.sources);
    let queued = 0;
    const changed: typeof measurements = [];
    for (const m of measurements) {
      const n = await recordMeasurement(client, ledger, m, evaluatedAt, destinations);
      if (n > 0) changed.push(m);
      queued += n;
    }
    await client.query("commit");
    for (const m of changed) {
      const fields = { rule: m.rule, source: m.source, value: m.value, threshold: m.threshold };
      log.info(fields, m.firing ? "alert firing" : "alert resolved");
    }
    return queued;
  } catch (error) {
    await client?.query("rollback").catch((rollbackError: Error) => {
      broken = rollbackError;
    });
    log.error({ err: error }, "alerts: evaluation failed; trying again at the next interval");
    return 0;
  } finally {
    client?.release(broken);
  }
}

// The alerts' queue for the engine: due messages of these sources and destinations, leased past the send's timeout
// so no other instance takes one this one is still sending; each send recorded by the attempt that took it.
function alertQueue(options: AlertsOptions): EngineQueue<OutgoingAlert> {
  const timeoutMs = options.sendTimeoutMs ?? 10_000;
  const policy: RetryPolicy = { maxAttempts: 20, baseDelayMs: 2000, maxDelayMs: 600_000, ...options.retry };
  return {
    take: (limit) =>
      takeDueAlerts(options.pool, options.ledger, {
        destinations: options.destinations.map((d) => d.name),
        sources: options.sources,
        limit,
        leaseMs: timeoutMs + 30_000,
      }),
    deliver: (m, signal) =>
      sendOne(options, m, timeoutMs, policy, signal).catch((error) =>
        options.log.error({ err: error, rule: m.rule, source: m.source }, "alerts: recording a send failed"),
      ),
  };
}

async function sendOne(
  options: AlertsOptions,
  m: OutgoingAlert,
  timeoutMs: number,
  policy: RetryPolicy,
  signal: AbortSignal,
): Promise<void> {
  const { pool, ledger, log } = options;
  const destination = options.destinations.find((d) => d.name === m.destination);
  if (!destination) return;
  const result = await sendAlert(destination, m, { timeoutMs, signal });
  // Logged by the destination's name and kind only: its URL may be its token (Slack).
  const fields = {
    destination: destination.name,
    kind: m.kind,
    rule: m.rule,
    source: m.source,
    attempt: m.attempts,
  };
  if (result.ok) {
    await recordAlertAttempt(pool, ledger, m, { sent: true });
    log.info(fields, "alert sent");
    return;
  }
  const last = m.attempts >= policy.maxAttempts;
  const retryInMs = last ? null : retryDelay(policy, m.attempts);
  await recordAlertAttempt(pool, ledger, m, { sent: false, error: result.error, retryInMs });
  if (last) log.error({ ...fields, error: result.error }, "alert not sent: out of attempts");
  else
    log.warn(
      { ...fields, error: result.error, retryInMs: Math.round(retryInMs ?? 0) },
      "alert not sent; retrying",
    );
}
