// One cell of the scale mode's N×M phase (scale-nxm.ts): R `hookledger serve --no-worker` and W `hookledger worker`
// processes on the filled ledger, the same BENCH_EVENTS events (BENCH_ENTITIES entities, many events each) sent
// round-robin over the receivers at a fixed rate (or as fast as they go) while the workers apply them; Postgres CPU
// per claim and per event (the receivers' and the workers' backends, from their own counters), lock waits,
// deadlocks, serialization failures and exactly-once.
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import type pg from "pg";
import type { LoadgenResult, LoadgenSpec } from "../loadgen.js";
import { nextMessage, spawnChild, stopChild, waitForLine } from "../lib/child.js";
import { CpuTracker } from "../lib/cpu.js";
import { backlogPendingSql } from "../lib/worker-ledger.js";
import { appTableDdl, expectedAppState } from "../peers/app-table.js";
import { startServe } from "./http.js";
import { benchSecret } from "./loadgen-run.js";
import { clearRun } from "./scale-ledger.js";
import {
  countIn,
  DEADLOCK,
  deadlockCount,
  lockSampler,
  resetStatements,
  SERIALIZATION,
  topStatements,
} from "./scale-nxm-probes.js";
import type { RunContext } from "./types.js";

const CONFIG = "hookledger-nxm.config.mjs";
const IDLE_SECONDS = 5;

/** One cell's figures. */
export interface NxmCell {
  readonly receivers: number;
  readonly workers: number;
  /** Postgres CPU µs per claim: the receivers' backends over the ingest, ÷ the events. */
  readonly claimUs: number;
  /** Postgres CPU µs per event: the workers' backends from the first request until the backlog is gone, ÷ events. */
  readonly eventUs: number;
  /** Samples (every 100 ms) with a client backend waiting on a lock, of all samples; the most at once. */
  readonly lockSamples: number;
  readonly samples: number;
  readonly lockMax: number;
  /** pg_stat_database.deadlocks over the cell, and the log lines saying 40P01 or 40001. */
  readonly deadlocks: number;
  readonly serialization: number;
  /** Events retried (attempts > 1). */
  readonly retried: number;
  /** From the event's receipt (received_at) to its handler's first statement, ms. */
  readonly pickP50: number;
  readonly pickP99: number;
  /** Postgres CPU ms per second of the receivers' and of the workers' backends over a window with no load. */
  readonly idleReceiversMs: number;
  readonly idleWorkersMs: number;
  /** The statements that took the most time (pg_stat_statements, when loaded), for the log. */
  readonly statements: string;
  readonly ingestSeconds: number;
  readonly drainSeconds: number;
  /** What voids the cell's figures: unexpected answers, a backlog left. */
  readonly problems: readonly string[];
  /** What breaks exactly-once: an event not settled, or applied other than once, or out of version order. */
  readonly exactlyOnce: readonly string[];
}

async function startWorker(
  ctx: RunContext,
  schema: string,
  secret: string,
  log: string,
): Promise<ChildProcess> {
  const child = spawnChild(
    process.execPath,
    [
      join(ctx.root, "dist", "cli", "main.js"),
      "worker",
      "--config",
      join(ctx.root, "bench", "peers", CONFIG),
    ],
    {
      env: { DATABASE_URL: ctx.env.url, HOOKLEDGER_SCHEMA: schema, BENCH_STRIPE_SECRET: secret },
      logFile: join(ctx.logDir, log),
    },
  );
  try {
    await waitForLine(child, /hookledger worker ready/, 120_000);
    return child;
  } catch (error) {
    await stopChild(child);
    throw error;
  }
}

async function sendEvents(
  ctx: RunContext,
  spec: LoadgenSpec,
  log: string,
  measure: { start(): Promise<void> },
): Promise<LoadgenResult> {
  const child = spawnChild(process.execPath, ["--import", "tsx", join(ctx.root, "bench", "loadgen.ts")], {
    env: { BENCH_LOADGEN: JSON.stringify(spec) },
    logFile: join(ctx.logDir, log),
    ipc: true,
  });
  try {
    await nextMessage(child, (m) => m.phase === "ready", 300_000, "the load generator's bodies");
    const longest = (spec.seconds + 120) * 1000;
    const reported = nextMessage<LoadgenResult>(
      child,
      (m) => m.phase === "result",
      longest,
      "the load report",
    );
    await measure.start();
    child.send("go");
    return await reported;
  } finally {
    await stopChild(child, "SIGTERM", 2000);
  }
}

// What the ledger and the app tables hold after the cell: every event settled once, applied once, in version order.
async function exactlyOnce(
  ctx: RunContext,
  schema: string,
): Promise<{ problems: string[]; retried: number }> {
  const { events, entities } = ctx.env;
  const problems: string[] = [];
  const ledger = (
    await ctx.admin.query<{ n: string; applied: string; retried: string }>(
      `select count(*) as n, count(*) filter (where status = 'settled' and outcome = 'applied') as applied,
              count(*) filter (where attempts > 1) as retried
         from ${schema}.events where dedupe_key like 'evt\\_w\\_%'`,
    )
  ).rows[0];
  if (Number(ledger?.n) !== events || Number(ledger?.applied) !== events)
    problems.push(`ledger: ${ledger?.n} rows, ${ledger?.applied} settled applied, of ${events}`);
  const applied = (
    await ctx.admin.query<{ n: string; distinct: string }>(
      `select count(*) as n, count(distinct dedupe_key) as distinct from ${schema}.app_applications`,
    )
  ).rows[0];
  if (Number(applied?.n) !== events || Number(applied?.distinct) !== events)
    problems.push(`applications: ${applied?.n} of ${applied?.distinct} distinct events, expected ${events}`);
  const expected = expectedAppState(events, entities);
  const app = (
    await ctx.admin.query<{ n: string; versions: string | null }>(
      `select count(*) as n, sum(version) as versions from ${schema}.app_subscriptions`,
    )
  ).rows[0];
  if (Number(app?.n) !== expected.rows || BigInt(app?.versions ?? 0) !== expected.versionSum)
    problems.push(`app table: ${app?.n} rows summing to ${app?.versions}, expected ${expected.rows}`);
  return { problems, retried: Number(ledger?.retried) };
}

async function pickWait(db: pg.ClientBase, schema: string): Promise<{ p50: number; p99: number }> {
  const { rows } = await db.query<{ p50: number | null; p99: number | null }>(
    `select percentile_disc(0.5) within group (order by w) as p50, percentile_disc(0.99) within group (order by w) as p99
       from (select extract(epoch from a.applied_at - e.received_at) * 1000 as w
               from ${schema}.app_applications a join ${schema}.events e
                 on e.source = 'stripe' and e.dedupe_key = a.dedupe_key) as waits`,
  );
  return { p50: Number(rows[0]?.p50 ?? Number.NaN), p99: Number(rows[0]?.p99 ?? Number.NaN) };
}

/**
 * Runs one cell: R receivers and W workers on `schema`, the events sent, the backlog drained, the figures checked.
 *
 * @example
 * const cell = await runCell(ctx, schema, { receivers: 4, workers: 4, rate: 300, tag: "nxm-4x4" });
 */
export async function runCell(
  ctx: RunContext,
  schema: string,
  shape: {
    readonly receivers: number;
    readonly workers: number;
    readonly rate: number;
    readonly tag: string;
  },
): Promise<NxmCell> {
  const { receivers, workers, rate, tag } = shape;
  const { events, entities } = ctx.env;
  await ctx.admin.query(`drop table if exists ${schema}.app_applications`);
  await clearRun(ctx.admin, schema);
  await ctx.admin.query(appTableDdl(schema));
  await ctx.admin.query(
    `create table ${schema}.app_applications (dedupe_key text not null, attempt int not null,
       applied_at timestamptz not null default clock_timestamp())`,
  );
  const secret = benchSecret();
  const serving = await Promise.all(
    Array.from({ length: receivers }, (_, k) =>
      startServe(ctx, `${tag}-receiver${k + 1}`, { schema, config: CONFIG, secret }),
    ),
  );
  const working: ChildProcess[] = [];
  const logs = [
    ...serving.map((_, k) => join(ctx.logDir, `hookledger-${tag}-receiver${k + 1}-r${ctx.round}.log`)),
    ...Array.from({ length: workers }, (_, k) => join(ctx.logDir, `hookledger-${tag}-worker${k + 1}.log`)),
  ];
  try {
    working.push(
      ...(await Promise.all(
        Array.from({ length: workers }, (_, k) =>
          startWorker(ctx, schema, secret, `hookledger-${tag}-worker${k + 1}.log`),
        ),
      )),
    );
    // Every process's backends cost something with no load at all (timers, the floor's refresh): measured apart,
    // so that where a cell's CPU goes can be read.
    const pidsOf = {
      receivers: () => serving.map((s) => s.server.pid as number),
      workers: () => working.map((w) => w.pid as number),
    };
    const idle = [
      new CpuTracker(ctx.admin, pidsOf.receivers, ctx.pgPort),
      new CpuTracker(ctx.admin, pidsOf.workers, ctx.pgPort),
    ];
    await Promise.all(idle.map((t) => t.start()));
    await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
    const [idleReceivers, idleWorkers] = await Promise.all(idle.map((t) => t.stop()));
    const tracking = await resetStatements(ctx.admin);
    const receiverCpu = new CpuTracker(ctx.admin, pidsOf.receivers, ctx.pgPort);
    const workerCpu = new CpuTracker(ctx.admin, pidsOf.workers, ctx.pgPort);
    const locks = lockSampler(ctx.env.url);
    const deadlocksBefore = await deadlockCount(ctx.admin);
    let began = 0;
    const [first, ...rest] = serving.map((s) => s.url);
    const load = await sendEvents(
      ctx,
      {
        url: first as string,
        urls: rest,
        path: "/webhooks/stripe",
        connections: ctx.env.connections,
        warmupSeconds: 0,
        seconds: (rate > 0 ? Math.ceil(events / rate) : 0) + 600,
        secret,
        bodyBytes: ctx.env.bodyBytes,
        prefix: "evt_w",
        mode: "unique",
        count: events,
        total: events,
        entities,
        expect: '"status":"accepted"',
        expectId: true,
        ...(rate > 0 && { rate }),
      },
      `loadgen-${tag}.log`,
      {
        async start() {
          await Promise.all([receiverCpu.start(), workerCpu.start(), locks.start()]);
          began = performance.now();
        },
      },
    );
    const ingested = performance.now();
    const claims = await receiverCpu.stop();
    const problems: string[] = [];
    const unexpected = load.warmup.unexpected + load.window.unexpected + load.drain.unexpected;
    if (unexpected > 0 || load.sent !== events)
      problems.push(
        `${load.sent} sent, ${unexpected} unexpected answers: ${load.samples.map((s) => s.answer).join("; ")}`,
      );
    const limit = ingested + Math.max(120_000, events * 10);
    let drained = false;
    while (!drained && performance.now() < limit) {
      drained = !(await ctx.admin.query<{ pending: boolean }>(backlogPendingSql(schema))).rows[0]?.pending;
      if (!drained) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const done = performance.now();
    const applying = await workerCpu.stop();
    const lockCounts = await locks.stop();
    if (!drained)
      problems.push(`work still pending ${((done - ingested) / 1000).toFixed(0)} s after the ingest`);
    // pg_stat_database is flushed by each backend within a second of its transactions.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const deadlocks = (await deadlockCount(ctx.admin)) - deadlocksBefore;
    await Promise.all([...working, ...serving.map((s) => s.server)].map((child) => stopChild(child)));
    const checked = await exactlyOnce(ctx, schema);
    const wait = await pickWait(ctx.admin, schema);
    return {
      receivers,
      workers,
      claimUs: (claims.backends / events) * 1e6,
      eventUs: (applying.backends / events) * 1e6,
      lockSamples: lockCounts.filter((n) => n > 0).length,
      samples: lockCounts.length,
      lockMax: Math.max(0, ...lockCounts),
      deadlocks: Math.max(deadlocks, countIn(logs, DEADLOCK)),
      serialization: countIn(logs, SERIALIZATION),
      retried: checked.retried,
      pickP50: wait.p50,
      pickP99: wait.p99,
      idleReceiversMs: ((idleReceivers?.backends ?? Number.NaN) / IDLE_SECONDS) * 1000,
      idleWorkersMs: ((idleWorkers?.backends ?? Number.NaN) / IDLE_SECONDS) * 1000,
      statements: tracking ? await topStatements(ctx.admin, schema, events, 6) : "",
      ingestSeconds: (ingested - began) / 1000,
      drainSeconds: (done - ingested) / 1000,
      problems,
      exactlyOnce: checked.problems,
    };
  } finally {
    await Promise.all([...working, ...serving.map((s) => s.server)].map((child) => stopChild(child)));
  }
}
