import type pg from "pg";
import type { CpuSplit } from "../lib/cpu.js";
import type { BenchEnv } from "../lib/env.js";

/** What every contender gets: the knobs, an admin connection, and where to put logs. */
export interface RunContext {
  readonly env: BenchEnv;
  /** One superuser connection for DDL, checks and pg_stat_activity (not counted in any contender's CPU). */
  readonly admin: pg.Client;
  readonly pgPort: number;
  /** bench/results/logs: each process's stdout and stderr. */
  readonly logDir: string;
  /** 1-based. */
  readonly round: number;
  /** The repository root (where package.json is). */
  readonly root: string;
}

/** One measurement of one contender in one round. */
export interface RunResult {
  /** The row of the summary table, e.g. "hookledger serve: unique". */
  readonly name: string;
  readonly round: number;
  readonly unit: "req/s" | "tps" | "events/s";
  /** False when any answer was unexpected or a check after the run failed: the figure is then not used. */
  readonly valid: boolean;
  readonly problems: readonly string[];
  /** Operations completed in the measured window (requests, transactions, events). */
  readonly ops: number;
  readonly seconds: number;
  readonly perSecond: number;
  /** Latency in ms (HTTP: request to answer at the load generator; pgbench: per transaction). */
  readonly p50?: number;
  readonly p99?: number;
  readonly cpu?: CpuSplit;
  /** CPU seconds of the load generator over the window (pgbench: all of pgbench's). */
  readonly loadgenCpu?: number;
  /** Share of the window the load generator's event loop was busy. */
  readonly loadgenBusy?: number;
  /** The contender process's VmHWM at the end, MB. */
  readonly peakRssMB?: number | undefined;
  readonly statuses?: Readonly<Record<string, number>>;
  readonly notes: readonly string[];
}

/** A contender: its name (BENCH_ONLY matches it) and one run of it, which may measure more than one row. */
export interface Contender {
  readonly name: string;
  /** The rows (name and unit) its run reports: a run that throws reports each as invalid. */
  readonly rows: readonly (readonly [string, RunResult["unit"]])[];
  run(ctx: RunContext): Promise<RunResult[]>;
}
