import type { Registry } from "prom-client";
import { promClient } from "../deps.js";
import type { EdgeObserver } from "../edge/observer.js";
import type { ForwardReport } from "../forward/deliver.js";
import type { OutboxSendReport } from "../outbox/deliver.js";
import type { AttemptReport } from "../worker/attempt.js";
import { pendingCounts } from "./pending-counts.js";
import { type BacklogOptions, backlogReader } from "./backlog.js";

/**
 * Options of {@link createMetrics}.
 *
 * @example
 * createMetrics({ registry: appRegistry }); // beside your app's metrics, without a second set of process metrics
 */
export interface MetricsOptions {
  /**
   * Where the metrics are registered. Each call of {@link createMetrics} needs a registry of its own (names repeat).
   * @defaultValue a new `Registry`; never prom-client's global one
   */
  readonly registry?: Registry;
  /**
   * Also export the process metrics of prom-client's `collectDefaultMetrics` (CPU, memory, event loop lag).
   * @defaultValue true with the default registry, false with yours (your app may collect them already)
   */
  readonly processMetrics?: boolean;
}

/**
 * hookledger's Prometheus metrics: feed them from the edge and the worker, scrape `registry`.
 *
 * @example
 * const metrics: Metrics = createMetrics();
 * createReceiver({ ...options, observer: metrics.observer });
 */
export interface Metrics {
  readonly registry: Registry;
  /** Pass as the receiver's `observer`. */
  readonly observer: EdgeObserver;
  /** Pass as the worker's `onAttempt`. */
  readonly onAttempt: (report: AttemptReport) => void;
  /** Pass as the worker's `onOutboxSend`. */
  readonly onOutboxSend: (report: OutboxSendReport) => void;
  /** Pass as the worker's `onForward`. */
  readonly onForward: (report: ForwardReport) => void;
  /**
   * Exports the backlog gauges, read from the database on each scrape (bounded by `timeoutMs`). Call it once.
   * @example
   * metrics.trackBacklog({ db: adminPool, ledger, timeoutMs: 1000 });
   */
  trackBacklog(options: BacklogOptions): void;
}

// Claims commit in about a millisecond; the edge gives up at 1.8 s.
const CLAIM_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2];
// Handlers call other APIs; the default handler timeout is 30 s.
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Creates hookledger's metrics in a registry of their own (names under `hookledger_`):
 *
 * | metric | type | labels |
 * |---|---|---|
 * | `hookledger_deliveries_total` | counter | source, result |
 * | `hookledger_verification_failures_total` | counter | source, reason |
 * | `hookledger_claim_duration_seconds` | histogram | source, result |
 * | `hookledger_duplicate_cache_hits_total` | counter | source |
 * | `hookledger_duplicate_body_mismatches_total` | counter | source |
 * | `hookledger_attempts_total` | counter | source, type, result, outcome |
 * | `hookledger_attempt_duration_seconds` | histogram | source, result |
 * | `hookledger_dead_letters_total` | counter | source, type |
 * | `hookledger_outbox_sends_total` | counter | sender, result |
 * | `hookledger_outbox_send_duration_seconds` | histogram | sender, result |
 * | `hookledger_outbox_dead_total` | counter | sender |
 * | `hookledger_backlog_due_events` | gauge | |
 * | `hookledger_backlog_oldest_due_seconds` | gauge | |
 * | `hookledger_backlog_up` | gauge | |
 *
 * Deliveries to an unknown source are counted under `source=""`: the name comes from the URL, and anyone may
 * invent names.
 *
 * @example
 * const metrics = createMetrics();
 * const receiver = createReceiver({ ...options, observer: metrics.observer });
 * const worker = startWorker({ ...options, onAttempt: metrics.onAttempt, onOutboxSend: metrics.onOutboxSend });
 * metrics.trackBacklog({ db: pool, ledger });
 * const text = await metrics.registry.metrics();
 */
export function createMetrics(options: MetricsOptions = {}): Metrics {
  const { Counter, Histogram, Registry, collectDefaultMetrics } = promClient();
  const registry = options.registry ?? new Registry();
  if (options.processMetrics ?? options.registry === undefined) {
    collectDefaultMetrics({ register: registry });
  }
  const registers = [registry];
  // The edge's counts are handed to prom-client when read (see pendingCounts), not on every delivery.
  const deliveries = pendingCounts(["source", "result"]);
  new Counter({
    name: "hookledger_deliveries_total",
    help: "Webhook deliveries answered, by source and result (accepted, duplicate, unauthorized, ...).",
    labelNames: ["source", "result"] as const,
    registers,
    collect() {
      deliveries.drainInto(this);
    },
  });
  const verificationFailures = pendingCounts(["source", "reason"]);
  new Counter({
    name: "hookledger_verification_failures_total",
    help: "Deliveries refused with 401, by source and the provider's reason.",
    labelNames: ["source", "reason"] as const,
    registers,
    collect() {
      verificationFailures.drainInto(this);
    },
  });
  const claimSeconds = new Histogram({
    name: "hookledger_claim_duration_seconds",
    help: "Time from the claim's start to its commit (or duplicate answer).",
    labelNames: ["source", "result"] as const,
    buckets: CLAIM_BUCKETS,
    registers,
  });
  const cacheHits = pendingCounts(["source"]);
  new Counter({
    name: "hookledger_duplicate_cache_hits_total",
    help: "Duplicates answered from the confirmed-duplicate cache, without the database.",
    labelNames: ["source"] as const,
    registers,
    collect() {
      cacheHits.drainInto(this);
    },
  });
  const mismatches = pendingCounts(["source"]);
  new Counter({
    name: "hookledger_duplicate_body_mismatches_total",
    help: "Duplicates whose body differs from the first delivery's (same id, different payload).",
    labelNames: ["source"] as const,
    registers,
    collect() {
      mismatches.drainInto(this);
    },
  });
  const attempts = new Counter({
    name: "hookledger_attempts_total",
    help: "Worker attempts, by source, event type, result (settled, failed, dead, abandoned) and outcome.",
    labelNames: ["source", "type", "result", "outcome"] as const,
    registers,
  });
  const attemptSeconds = new Histogram({
    name: "hookledger_attempt_duration_seconds",
    help: "Time from an event's pick to the end of its attempt.",
    labelNames: ["source", "result"] as const,
    buckets: ATTEMPT_BUCKETS,
    registers,
  });
  const deadLetters = new Counter({
    name: "hookledger_dead_letters_total",
    help: "Events that exhausted their attempts (status dead).",
    labelNames: ["source", "type"] as const,
    registers,
  });

  const outboxSends = new Counter({
    name: "hookledger_outbox_sends_total",
    help: "Outbox send attempts, by sender and result (sent, retry, dead, given-back, lost).",
    labelNames: ["sender", "result"] as const,
    registers,
  });
  const outboxSeconds = new Histogram({
    name: "hookledger_outbox_send_duration_seconds",
    help: "Time of an outbox send attempt, from its lease to its record.",
    labelNames: ["sender", "result"] as const,
    buckets: ATTEMPT_BUCKETS,
    registers,
  });
  const outboxDead = new Counter({
    name: "hookledger_outbox_dead_total",
    help: "Outbox messages that will not be sent again (attempts exhausted, or refused for good).",
    labelNames: ["sender"] as const,
    registers,
  });
  const onOutboxSend = (report: OutboxSendReport) => {
    outboxSends.inc({ sender: report.sender, result: report.result });
    outboxSeconds.observe({ sender: report.sender, result: report.result }, report.ms / 1000);
    if (report.result === "dead") outboxDead.inc({ sender: report.sender });
  };

  const forwardAttempts = new Counter({
    name: "hookledger_forward_attempts_total",
    help: "Forward delivery attempts, by source and result (sent, retry, dead, disabled, given-back, lost).",
    labelNames: ["source", "result"] as const,
    registers,
  });
  const forwardSeconds = new Histogram({
    name: "hookledger_forward_duration_seconds",
    help: "Time of a forward delivery attempt, from its lease to its record.",
    labelNames: ["source", "result"] as const,
    buckets: ATTEMPT_BUCKETS,
    registers,
  });
  const onForward = (report: ForwardReport) => {
    forwardAttempts.inc({ source: report.source, result: report.result });
    forwardSeconds.observe({ source: report.source, result: report.result }, report.ms / 1000);
  };

  const observer: EdgeObserver = {
    delivery(report) {
      const source = report.result === "unknown_source" ? "" : report.source;
      deliveries.add(source, report.result);
      if (report.result === "unauthorized" || report.result === "rate_limited") {
        verificationFailures.add(source, report.reason ?? "unknown");
      }
      if (report.claimSeconds !== undefined) {
        claimSeconds.observe({ source, result: report.result }, report.claimSeconds);
      }
      if (report.shortCircuit) cacheHits.add(source);
      if (report.bodyMismatch) mismatches.add(source);
    },
  };

  const onAttempt = (report: AttemptReport) => {
    attempts.inc({
      source: report.source,
      type: report.type,
      result: report.result,
      ...(report.outcome !== undefined && { outcome: report.outcome }),
    });
    attemptSeconds.observe({ source: report.source, result: report.result }, report.seconds);
    if (report.result === "dead") deadLetters.inc({ source: report.source, type: report.type });
  };

  let tracking = false;
  return {
    registry,
    observer,
    onAttempt,
    onOutboxSend,
    onForward,
    trackBacklog(backlogOptions) {
      if (tracking) throw new Error("trackBacklog() was already called for these metrics");
      tracking = true;
      trackBacklog(registry, backlogReader(backlogOptions));
    },
  };
}

function trackBacklog(registry: Registry, read: ReturnType<typeof backlogReader>): void {
  const { Gauge } = promClient();
  const registers = [registry];
  // NaN, not the last value, when the read failed: a stale backlog would look healthy.
  new Gauge({
    name: "hookledger_backlog_due_events",
    help: "Events due for the worker now (pending, or failed and past their retry time); NaN when unknown.",
    registers,
    async collect() {
      this.set((await read())?.due ?? Number.NaN);
    },
  });
  new Gauge({
    name: "hookledger_backlog_oldest_due_seconds",
    help: "How long the longest-waiting due event has been due (the worker's lag); NaN when unknown.",
    registers,
    async collect() {
      this.set((await read())?.oldestDueSeconds ?? Number.NaN);
    },
  });
  new Gauge({
    name: "hookledger_backlog_up",
    help: "1 when this scrape's backlog query answered in time, else 0.",
    registers,
    async collect() {
      this.set((await read()) === undefined ? 0 : 1);
    },
  });
}
