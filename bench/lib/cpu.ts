// CPU seconds of a contender over its measured window, split by who spent them: its own process(es), the Postgres
// backends serving them (found by their TCP ports in pg_stat_activity), and Postgres's shared helpers (WAL writer,
// checkpointer, autovacuum …, which every client of the cluster shares — other work on the machine shows there).
import type pg from "pg";
import { connectionPorts, cpuSeconds } from "./proc.js";

/** CPU seconds spent between `start()` and `stop()`. */
export interface CpuSplit {
  /** The contender's own processes (server or worker; pgbench for pgbench). */
  readonly process: number;
  /** The Postgres backends connected to those processes. */
  readonly backends: number;
  /** How many distinct backends were seen serving them. */
  readonly backendCount: number;
  /** Postgres processes that are not client backends (shared by every client of the cluster). */
  readonly pgShared: number;
}

interface Sample {
  readonly process: Map<number, number>;
  readonly backends: Map<number, number>;
  readonly shared: Map<number, number>;
}

/**
 * Samples CPU every `intervalMs` (so a backend that exits mid-window still counts up to its last sample) and sums the
 * deltas at `stop()`. A backend first seen after `start()` counts from zero.
 *
 * @example
 * const cpu = new CpuTracker(admin, () => [server.pid], 5432);
 * await cpu.start(); … const split = await cpu.stop();
 */
export class CpuTracker {
  readonly #db: pg.Client;
  readonly #pids: () => readonly number[];
  readonly #pgPort: number;
  readonly #intervalMs: number;
  #first: Sample | undefined;
  #last: Sample | undefined;
  #timer: NodeJS.Timeout | undefined;
  #sampling: Promise<void> = Promise.resolve();

  constructor(db: pg.Client, pids: () => readonly number[], pgPort: number, intervalMs = 1000) {
    this.#db = db;
    this.#pids = pids;
    this.#pgPort = pgPort;
    this.#intervalMs = intervalMs;
  }

  async start(): Promise<void> {
    this.#first = await this.#sample();
    this.#last = this.#first;
    this.#timer = setInterval(() => {
      this.#sampling = this.#sampling
        .then(async () => {
          this.#last = merge(this.#last, await this.#sample());
        })
        // A missed sample only loses a backend that exits before the next one; stop() samples again.
        .catch(() => {});
    }, this.#intervalMs);
  }

  /** Stops sampling without a result (the measured run failed). Safe to call after `stop()`. */
  cancel(): void {
    clearInterval(this.#timer);
  }

  async stop(): Promise<CpuSplit> {
    clearInterval(this.#timer);
    await this.#sampling;
    const last = merge(this.#last, await this.#sample());
    const first = this.#first;
    if (!first) throw new Error("CpuTracker.stop() before start()");
    const delta = (from: Map<number, number>, to: Map<number, number>) => {
      let sum = 0;
      for (const [pid, seconds] of to) sum += seconds - (from.get(pid) ?? 0);
      return sum;
    };
    return {
      process: delta(first.process, last.process),
      backends: delta(first.backends, last.backends),
      backendCount: last.backends.size,
      pgShared: delta(first.shared, last.shared),
    };
  }

  async #sample(): Promise<Sample> {
    const pids = this.#pids();
    const ports = new Set(pids.flatMap((pid) => connectionPorts(pid, this.#pgPort)));
    const { rows } = await this.#db.query<{ pid: number; client_port: number | null; backend_type: string }>(
      "select pid, client_port, backend_type from pg_stat_activity",
    );
    const read = (list: readonly number[]) => {
      const out = new Map<number, number>();
      for (const pid of list) {
        const seconds = cpuSeconds(pid);
        if (seconds !== undefined) out.set(pid, seconds);
      }
      return out;
    };
    return {
      process: read(pids),
      backends: read(
        rows
          .filter((r) => r.backend_type === "client backend" && ports.has(r.client_port ?? -1))
          .map((r) => r.pid),
      ),
      shared: read(rows.filter((r) => r.backend_type !== "client backend").map((r) => r.pid)),
    };
  }
}

// The later sample wins for every process it saw; a process that has exited keeps its last reading.
function merge(earlier: Sample | undefined, later: Sample): Sample {
  if (!earlier) return later;
  const join = (a: Map<number, number>, b: Map<number, number>) => new Map([...a, ...b]);
  return {
    process: join(earlier.process, later.process),
    backends: join(earlier.backends, later.backends),
    shared: join(earlier.shared, later.shared),
  };
}

/**
 * The TCP port a Postgres URL points at (5432 when it names none).
 *
 * @example
 * pgPort("postgres://postgres@127.0.0.1:5433/test"); // 5433
 */
export function pgPort(url: string): number {
  try {
    const port = new URL(url).port;
    return port === "" ? 5432 : Number(port);
  } catch {
    return 5432;
  }
}
