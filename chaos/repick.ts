import type pg from "pg";
import type { FaultKind } from "./faults.js";

/** A fault as it happened: what, and when (the driver's clock, the same machine's as the server's). */
export interface FaultAt {
  /** A fault of the deck, or the primary lost in a failover run. */
  readonly kind: FaultKind | "failover";
  readonly at: number;
}

/** How long the attempts a fault cut off waited to be re-picked, and how deep the backlog was meanwhile. */
export interface Repick {
  /** Attempts that ended without an outcome (each is noted when its event is counted again). */
  readonly unrecorded: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly maxMs: number;
  /** The most events pending or failed at one sample (every second, during the deliveries and faults). */
  readonly peakBacklog: number;
}

// The faults that can end an attempt without an outcome. A freeze's events come back through the idle bound (30 s,
// docs/architecture.md) once it is over, so a freeze is not counted as the cause.
const CUTTING: readonly FaultAt["kind"][] = [
  "killWorker",
  "restartPostgres",
  "terminateBackends",
  "failover",
];

/**
 * Samples the backlog's depth every second until `stop` is called, which resolves to the deepest sample. A sample
 * that fails (the server is restarting) is skipped.
 */
export function sampleBacklog(admin: pg.Pool, schema: string): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await admin
        .query<{ n: number }>(
          `select count(*)::int as n from ${schema}.events where status in ('pending', 'failed')`,
        )
        .catch(() => ({ rows: [] as { n: number }[] }));
      peak = Math.max(peak, rows[0]?.n ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return peak;
    },
  };
}

/**
 * Each unrecorded attempt's wait: from the last fault that could have cut it off (a worker kill, a Postgres
 * restart, terminated backends) to the count that found it (its note's `failed_at` in the attempt history). Taking
 * the last such fault before the note makes each wait a lower bound when faults come close together; the median
 * and the maximum still show whether a cut-off event waited for its lease or for the backlog.
 */
export async function repickDelays(
  admin: pg.Pool,
  schema: string,
  faults: readonly FaultAt[],
  peakBacklog: number,
): Promise<Repick> {
  const { rows } = await admin.query<{ at: Date }>(
    `select failed_at as at from ${schema}.attempt_errors where error like 'attempt % ended without an outcome%'`,
  );
  return {
    ...repickWaits(
      faults,
      rows.map((r) => r.at.getTime()),
    ),
    peakBacklog,
  };
}

/** The waits of `repickDelays`, from the faults and the times the counts noted an unrecorded attempt. */
export function repickWaits(
  faults: readonly FaultAt[],
  noted: readonly number[],
): Omit<Repick, "peakBacklog"> {
  const cuts = faults
    .filter((f) => CUTTING.includes(f.kind))
    .map((f) => f.at)
    .sort((a, b) => a - b);
  const waits: number[] = [];
  for (const time of noted) {
    const cause = cuts.filter((c) => c <= time).at(-1);
    if (cause !== undefined) waits.push(time - cause);
  }
  waits.sort((a, b) => a - b);
  const q = (p: number) => waits[Math.min(waits.length - 1, Math.floor(p * waits.length))] ?? 0;
  return { unrecorded: noted.length, p50Ms: q(0.5), p95Ms: q(0.95), maxMs: waits.at(-1) ?? 0 };
}
