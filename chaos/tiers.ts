import type { ChaosOptions } from "./run.js";

type Tier = Pick<
  ChaosOptions,
  "events" | "receivers" | "workers" | "faults" | "settleDeadlineMs" | "concurrency" | "postsPerSecond"
>;

/** The two tiers of docs/chaos.md. */
export const TIERS: Record<string, Tier> = {
  // ≤ 3 minutes on a 2-core machine.
  short: {
    events: 2000,
    receivers: 2,
    workers: 3,
    concurrency: 6,
    settleDeadlineMs: 90_000,
    faults: {
      counts: { killWorker: 5, killReceiver: 2, freezeWorker: 1, restartPostgres: 1, terminateBackends: 3 },
      intervalMs: 600,
      freezeMs: 35_000,
    },
  },
  long: {
    events: 20_000,
    receivers: 3,
    workers: 4,
    concurrency: 16,
    // About 90 s of deliveries, as long as the faults last.
    postsPerSecond: 350,
    settleDeadlineMs: 180_000,
    faults: {
      counts: {
        killWorker: 60,
        killReceiver: 12,
        freezeWorker: 3,
        restartPostgres: 4,
        terminateBackends: 30,
      },
      intervalMs: 800,
      freezeMs: 35_000,
    },
  },
  // Issue 35's deep backlog: a backlog tens of thousands deep while workers die, so that a killed worker's events
  // must keep their place in the queue (docs/architecture.md, "A crashed attempt keeps its place").
  deep: {
    events: 100_000,
    receivers: 3,
    workers: 4,
    concurrency: 16,
    // About 290 s of deliveries, as long as the faults last.
    postsPerSecond: 350,
    settleDeadlineMs: 900_000,
    faults: {
      counts: {
        killWorker: 200,
        killReceiver: 20,
        freezeWorker: 3,
        restartPostgres: 5,
        terminateBackends: 30,
      },
      intervalMs: 1100,
      freezeMs: 35_000,
    },
  },
};
