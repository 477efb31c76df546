// The worker contenders: graphile-worker (tuned) and hookledger's worker, each in a process of its own, each given
// BENCH_EVENTS events over BENCH_ENTITIES entities, queued or claimed before the clock starts. The clock runs from
// "go" until the bench's poll (every 50 ms) sees no work left; then the app table is checked against what applying
// every event in version order must leave.
import { join } from "node:path";
import { resolveConfig } from "hookledger";
import { nextMessage, spawnChild, stopChild } from "../lib/child.js";
import { CpuTracker } from "../lib/cpu.js";
import { cpuSeconds, memoryMB, resetPeakMemory } from "../lib/proc.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { backlogPendingSql } from "../lib/worker-ledger.js";
import { expectedAppState } from "../peers/app-table.js";
import { benchSecret } from "./loadgen-run.js";
import { benchPgbouncer } from "../lib/pgbouncer.js";
import type { Contender, RunContext, RunResult } from "./types.js";

// Each poll is one cheap statement on the bench's own connection; its CPU is reported in the notes. At 50 ms the
// end of a run is seen at most 50 ms late (2.5 % of a 2 s run).
const POLL_MS = 50;

/** One worker run: the peer script, its environment, and how the bench sees its backlog and checks its work. */
export interface WorkerRun {
  readonly name: string;
  readonly script: string;
  readonly env: NodeJS.ProcessEnv;
  /** True while work is left (one cheap statement; it runs every 50 ms). */
  readonly pendingSql: string;
  readonly appSchema: string;
  /** Checks after the backlog is done, besides the app table's; returns problems. */
  readonly check?: () => Promise<string[]>;
}

/**
 * Runs a worker peer over BENCH_EVENTS queued events and times it until the backlog is gone.
 *
 * @example
 * const row = await runWorker(ctx, { name: "hookledger worker c10", script: "hookledger-worker.ts", … });
 */
export async function runWorker(ctx: RunContext, spec: WorkerRun): Promise<RunResult> {
  const { events, entities } = ctx.env;
  const child = spawnChild(
    process.execPath,
    ["--import", "tsx", join(ctx.root, "bench", "peers", spec.script)],
    {
      env: {
        ...spec.env,
        DATABASE_URL: ctx.env.url,
        BENCH_EVENTS: String(events),
        BENCH_ENTITIES: String(entities),
        BENCH_BODY_BYTES: String(ctx.env.bodyBytes),
      },
      logFile: join(ctx.logDir, `${spec.name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}-r${ctx.round}.log`),
      ipc: true,
    },
  );
  let cpu: CpuTracker | undefined;
  try {
    const queueing = performance.now();
    await nextMessage(child, (m) => m.phase === "ready", 600_000, `${spec.name}: queueing ${events} events`);
    const queueSeconds = (performance.now() - queueing) / 1000;
    // The peak of the timed part, not of queueing the events.
    const peakReset = resetPeakMemory(child.pid as number);
    cpu = new CpuTracker(ctx.admin, () => [child.pid as number], ctx.pgPort);
    await cpu.start();
    const began = performance.now();
    const started = nextMessage(child, (m) => m.phase === "started", 60_000, `${spec.name}: starting`);
    child.send("go");
    await started;
    const limitMs = Math.max(120_000, events * 10);
    let done = false;
    let polls = 0;
    let ended = began;
    const pollBackend = (await ctx.admin.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]
      ?.pid;
    const pollCpu = pollBackend === undefined ? undefined : cpuSeconds(pollBackend);
    while (performance.now() - began < limitMs) {
      // The backlog was gone by the time this poll started, at the latest.
      ended = performance.now();
      const { rows } = await ctx.admin.query<{ pending: boolean }>(spec.pendingSql);
      polls++;
      if (!rows[0]?.pending) {
        done = true;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const seconds = (ended - began) / 1000;
    const pollSeconds =
      pollBackend === undefined || pollCpu === undefined
        ? Number.NaN
        : (cpuSeconds(pollBackend) ?? 0) - pollCpu;
    const split = await cpu.stop();
    const peakRssMB = memoryMB(child.pid as number, "VmHWM");
    const problems: string[] = [];
    if (!done) problems.push(`work still pending after ${(limitMs / 1000).toFixed(0)} s`);
    const expected = expectedAppState(events, entities);
    const { rows } = await ctx.admin.query<{ n: string; versions: string | null }>(
      `select count(*) as n, sum(version) as versions from ${spec.appSchema}.app_subscriptions`,
    );
    const got = { rows: Number(rows[0]?.n), versionSum: BigInt(rows[0]?.versions ?? 0) };
    if (got.rows !== expected.rows || got.versionSum !== expected.versionSum) {
      problems.push(
        `app table holds ${got.rows} rows, versions summing to ${got.versionSum}; expected ${expected.rows} rows summing to ${expected.versionSum}`,
      );
    }
    problems.push(...((await spec.check?.()) ?? []));
    const exited = nextMessage(child, () => false, 30_000, `${spec.name}: stopping`).catch(() => {});
    child.send("stop");
    await exited;
    return {
      name: spec.name,
      round: ctx.round,
      unit: "events/s",
      valid: problems.length === 0,
      problems,
      ops: events,
      seconds,
      perSecond: events / seconds,
      cpu: split,
      peakRssMB,
      notes: [
        `queued in ${queueSeconds.toFixed(1)} s; ${polls} polls of the backlog used ${(pollSeconds * 1000).toFixed(0)} ms of Postgres CPU`,
        ...(peakReset ? [] : ["peak RSS includes queueing the events (clear_refs not writable)"]),
      ],
    };
  } finally {
    cpu?.cancel();
    await stopChild(child);
  }
}

/**
 * graphile-worker 0.17, concurrency 10, localQueue 100, completeJobBatchDelay 0 (bench/peers/graphile.ts).
 *
 * @example
 * const [row] = await graphileWorker.run(ctx);
 */
export const graphileWorker: Contender = {
  name: "graphile-worker",
  rows: [["graphile-worker c10", "events/s"]],
  async run(ctx) {
    const schema = await freshSchema(ctx.admin, "gw", false);
    const appSchema = await freshSchema(ctx.admin, "gwapp");
    try {
      return [
        await runWorker(ctx, {
          name: "graphile-worker c10",
          script: "graphile.ts",
          env: { BENCH_SCHEMA: schema, BENCH_APP_SCHEMA: appSchema, BENCH_WORKER_CONCURRENCY: "10" },
          pendingSql: `select exists (select 1 from ${schema}._private_jobs) as pending`,
          appSchema,
          check: async () => {
            const { rows } = await ctx.admin.query<{ n: string }>(
              `select count(*) as n from ${schema}._private_jobs where last_error is not null`,
            );
            const failed = Number(rows[0]?.n);
            return failed > 0 ? [`${failed} jobs failed`] : [];
          },
        }),
      ];
    } finally {
      await dropSchema(ctx.admin, schema);
      await dropSchema(ctx.admin, appSchema);
    }
  },
};

/**
 * hookledger's default worker concurrency, as the configuration resolves it.
 *
 * @example
 * defaultWorkerConcurrency(); // 4
 */
export function defaultWorkerConcurrency(): number {
  return resolveConfig(
    {
      sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_x"] }],
      database: { url: "postgres://x" },
    },
    {},
  ).worker.concurrency;
}

/**
 * hookledger's worker as a contender; `without: "logs"` runs it with a silent logger (bench/cost.ts), `viaPgbouncer`
 * through PgBouncer in transaction mode.
 *
 * @example
 * const quiet = hookledgerWorker("c10-quiet", 10, false, "logs");
 */
export function hookledgerWorker(
  suffix: string,
  concurrency: number | undefined,
  advance: boolean,
  without?: "logs",
  viaPgbouncer = false,
): Contender {
  const label = `hookledger worker ${concurrency === undefined ? `default (c${defaultWorkerConcurrency()})` : `c${concurrency}`}${advance ? " + advance" : ""}${without ? ` without ${without}` : ""}${viaPgbouncer ? " via PgBouncer" : ""}`;
  return {
    name: `hookledger-worker-${suffix}`,
    rows: [[label, "events/s"]],
    async run(ctx) {
      const schema = await freshSchema(ctx.admin, "hlw", false);
      const bouncer = viaPgbouncer ? await benchPgbouncer(ctx) : undefined;
      try {
        return [
          await runWorker(ctx, {
            name: label,
            script: "hookledger-worker.ts",
            env: {
              BENCH_SCHEMA: schema,
              BENCH_STRIPE_SECRET: benchSecret(),
              BENCH_ADVANCE: advance ? "1" : "0",
              ...(bouncer && { BENCH_POOLER_URL: bouncer.url }),
              ...(without && { BENCH_WITHOUT: without }),
              ...(concurrency !== undefined && { BENCH_WORKER_CONCURRENCY: String(concurrency) }),
            },
            pendingSql: backlogPendingSql(schema),
            appSchema: schema,
            check: async () => {
              const { rows } = await ctx.admin.query<{ status: string; outcome: string | null; n: string }>(
                `select status, outcome, count(*) as n from ${schema}.events group by 1, 2`,
              );
              const counts = rows
                .map((r) => `${r.n} ${r.status}${r.outcome ? `/${r.outcome}` : ""}`)
                .join(", ");
              const settled = rows
                .filter(
                  (r) =>
                    r.status === "settled" && (r.outcome === "applied" || (advance && r.outcome === "stale")),
                )
                .reduce((sum, r) => sum + Number(r.n), 0);
              return settled === ctx.env.events
                ? []
                : [`ledger: ${counts} (expected ${ctx.env.events} settled)`];
            },
          }),
        ];
      } finally {
        await bouncer?.stop();
        await dropSchema(ctx.admin, schema);
      }
    },
  };
}

/**
 * hookledger's worker at graphile-worker's concurrency (10): the P3 figure.
 *
 * @example
 * const [row] = await hookledgerWorkerC10.run(ctx);
 */
export const hookledgerWorkerC10 = hookledgerWorker("c10", 10, false);
/**
 * hookledger's worker at its default concurrency.
 *
 * @example
 * const [row] = await hookledgerWorkerDefault.run(ctx);
 */
export const hookledgerWorkerDefault = hookledgerWorker("default", undefined, false);
/**
 * At concurrency 10 with the ledger's own version guard, ctx.advance(), before the upsert.
 *
 * @example
 * const [row] = await hookledgerWorkerAdvance.run(ctx);
 */
export const hookledgerWorkerAdvance = hookledgerWorker("c10-advance", 10, true);
/**
 * hookledger's worker at concurrency 10 through PgBouncer in transaction mode (docs/operations.md, "Behind
 * PgBouncer"), against `hookledger-worker-c10` straight to Postgres.
 *
 * @example
 * const [row] = await hookledgerWorkerPgbouncer.run(ctx);
 */
export const hookledgerWorkerPgbouncer = hookledgerWorker("c10-pgbouncer", 10, false, undefined, true);
