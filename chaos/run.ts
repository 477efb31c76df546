import { seededRandom } from "hookledger/testing";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { APP_DDL, appConfig, type Plant } from "./app-config.js";
import { type Cluster, startCluster } from "./cluster.js";
import { type Destination, type DestinationReport, startDestination } from "./destination.js";
import {
  type Answer,
  type FailoverPlan,
  type FailoverWindow,
  failoverWindow,
  missingAfterFailover,
  type Pair,
  startPair,
} from "./failover.js";
import { type FaultKind, type FaultPlan, runFaults } from "./faults.js";
import { judge, observe, unsettled, type Verdict } from "./oracle.js";
import { type FaultAt, type Repick, repickDelays, sampleBacklog } from "./repick.js";
import { Fleet } from "./processes.js";
import { deliver, lateStaleEvent, makeEvents, type SentEvent } from "./provider.js";
import { until } from "./wait.js";

export interface ChaosOptions {
  readonly events: number;
  readonly receivers: number;
  readonly workers: number;
  /** No plan: no faults (the oracle's own test). */
  readonly faults?: FaultPlan;
  /** A primary and its standby, and the primary killed once (instead of the faults). */
  readonly failover?: FailoverPlan;
  /** How long the run may take to settle once the faults are over. */
  readonly settleDeadlineMs: number;
  readonly plant: Plant;
  readonly seed: number;
  /** Provider POSTs in flight at once. */
  readonly concurrency: number;
  /** Pace the provider (POSTs a second), so that the faults meet deliveries. */
  readonly postsPerSecond?: number;
  /** Keep the temporary directory (server and process logs) instead of removing it. */
  readonly keep?: boolean;
  readonly note?: (line: string) => void;
}

export interface ChaosResult {
  readonly verdict: Verdict;
  readonly faults: Record<FaultKind, number> | undefined;
  readonly restarts: number;
  readonly providerPosts: number;
  readonly providerStatuses: Readonly<Record<number, number>>;
  readonly undelivered: number;
  /** What the outbound destination saw. */
  readonly destination: Omit<DestinationReport, "applied" | "forwarded" | "forwardKeys">;
  /** Phases' wall times in ms. */
  readonly timings: { readonly setup: number; readonly deliver: number; readonly settle: number };
  /** How long attempts cut off by a fault waited to be counted again, and the backlog's peak depth. */
  readonly repick: Repick;
  /** With a failover: its window, and how many acknowledged events the promoted standby lacked. */
  readonly failover?: FailoverWindow & { readonly missing: number };
  readonly dir: string;
}

const SCHEMA = "hookledger";
const ROOT = resolve(import.meta.dirname, "..");

/** Cleanups of runs in progress, so that Ctrl-C can stop everything a run started. */
const active = new Set<() => Promise<void>>();

/** Stops every run in progress (processes, clusters, temp dirs): the SIGINT path. */
export async function abortAll(): Promise<void> {
  await Promise.all([...active].map((stop) => stop()));
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => done(typeof address === "object" && address ? address.port : 0));
    });
    server.on("error", fail);
  });
}

/**
 * One chaos run: a fresh cluster, the fleet, the provider and the faults at once, then the settle and the oracle.
 * Everything it started is stopped before it returns or throws.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const note = options.note ?? (() => {});
  const random = seededRandom(options.seed);
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), "hookledger-chaos-"));
  // As root the server runs as the postgres user, who must be able to enter this directory.
  await chmod(dir, 0o755);
  let cluster: Cluster | undefined;
  let pair: Pair | undefined;
  let fleet: Fleet | undefined;
  let admin: pg.Pool | undefined;
  let destination: Destination | undefined;
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await fleet?.stop().catch(() => {});
      await destination?.close().catch(() => {});
      await admin?.end().catch(() => {});
      await (pair ?? cluster)?.stop().catch(() => {});
      if (!options.keep) await rm(dir, { recursive: true, force: true });
    })();
    return stopped;
  };
  active.add(stop);
  try {
    if (options.failover) {
      pair = await startPair(dir, [await freePort(), await freePort()], options.failover);
      cluster = pair.primary;
      note(`primary on port ${cluster.port} with a standby (${options.failover.shape}), files in ${dir}`);
    } else {
      cluster = await startCluster(dir, await freePort());
      note(`postgres on port ${cluster.port}, files in ${dir}`);
    }
    const driverPool = (url: string) => {
      const pool = new pg.Pool({ connectionString: url, max: 3, application_name: "chaos-driver" });
      // Connections the faults break are replaced; a broken idle one must not crash the driver.
      pool.on("error", () => {});
      return pool;
    };
    admin = driverPool(cluster.url);
    await admin.query(APP_DDL);
    const config = join(dir, "hookledger.config.mjs");
    // Its own generator, so the faults' and the provider's draws stay those of the seed without an outbound side.
    destination = await startDestination(seededRandom(options.seed + 1));
    await writeFile(
      config,
      appConfig(join(ROOT, "dist/index.js"), options.plant, destination.url, destination.forwardUrl),
    );
    const logDir = join(dir, "logs");
    await mkdir(logDir);
    const ports = await Promise.all(Array.from({ length: options.receivers }, freePort));
    fleet = new Fleet({
      bin: join(ROOT, "dist/cli/main.js"),
      config,
      databaseUrl: pair?.databaseUrl ?? cluster.url,
      logDir,
      receivers: ports,
      workers: options.workers,
    });
    await fleet.start();
    const setupMs = Date.now() - started;
    note(`${options.receivers} receivers and ${options.workers} workers ready in ${setupMs} ms`);

    const sent: SentEvent[] = makeEvents(options.events, random);
    // The `lose` plant drops one event from what the provider delivers, not from what the oracle expects.
    const delivered = options.plant === "lose" ? sent.slice(1) : sent;
    const receivers = () => fleet?.receivers().map((m) => m.url as string) ?? [];
    const deliverStart = Date.now();
    const f = fleet;
    const c = cluster;
    let a = admin;
    const answers: Answer[] = [];
    let failed: { killedAt: number; promotedAt: number } | undefined;
    const faultLog: FaultAt[] = [];
    const backlog = sampleBacklog(a, SCHEMA);
    const failLater = async (p: Pair, afterMs: number) => {
      await new Promise((resolve) => setTimeout(resolve, afterMs));
      note("kill -9 of the primary, then pg_ctl promote of the standby");
      failed = await p.fail();
      faultLog.push({ kind: "failover", at: failed.killedAt });
      note(`standby promoted ${failed.promotedAt - failed.killedAt} ms after the kill`);
      const old = a;
      a = driverPool(p.adminUrl());
      admin = a;
      await old.end().catch(() => {});
    };
    const [report, faults] = await Promise.all([
      deliver({
        events: delivered,
        receivers,
        seed: options.seed,
        concurrency: options.concurrency,
        ...(options.postsPerSecond !== undefined && { postsPerSecond: options.postsPerSecond }),
        onAnswer: (answer) => answers.push(answer),
      }).then((r) => {
        note(`provider done: ${r.delivered} events acknowledged, ${r.attempts} POSTs`);
        return r;
      }),
      options.faults
        ? runFaults(options.faults, f, c, a, random, note, (fault) => faultLog.push(fault))
        : Promise.resolve(undefined),
      pair && options.failover ? failLater(pair, options.failover.afterMs) : undefined,
    ]).finally(() => backlog.stop());
    const peakBacklog = await backlog.stop();
    const deliverMs = Date.now() - deliverStart;
    note(`deliveries and faults over (${deliverMs} ms)`);

    const settleStart = Date.now();
    const expected = delivered.length;
    let settledInTime = await until(
      async () => (await unsettled(a, SCHEMA, expected)) === 0,
      options.settleDeadlineMs,
    );
    // Then one event older than everything its entity saw: it must settle stale, whatever the processing order.
    const late = lateStaleEvent();
    sent.push(late);
    const lateReport = await deliver({ events: [late], receivers, seed: options.seed, concurrency: 1 });
    if (settledInTime) {
      settledInTime = await until(
        async () => (await unsettled(a, SCHEMA, expected + 1)) === 0,
        options.settleDeadlineMs,
      );
    }
    const settleMs = Date.now() - settleStart;
    note(settledInTime ? `settled in ${settleMs} ms` : `not settled within ${options.settleDeadlineMs} ms`);

    const { applied, forwarded, forwardKeys, ...outbound } = destination.report();
    const missing = failed ? await missingAfterFailover(a, SCHEMA, answers) : [];
    const observed = await observe(a, SCHEMA, sent, { applied, forwarded, forwardKeys });
    const verdict = judge({ ...observed, ackedMissing: missing });
    const repick = await repickDelays(a, SCHEMA, faultLog, peakBacklog);
    const statuses: Record<number, number> = { ...report.statuses };
    for (const [s, n] of Object.entries(lateReport.statuses))
      statuses[Number(s)] = (statuses[Number(s)] ?? 0) + n;
    return {
      verdict,
      faults,
      restarts: f.members.reduce((n, m) => n + m.starts - 1, 0),
      providerPosts: report.attempts + lateReport.attempts,
      providerStatuses: statuses,
      undelivered: report.undelivered.length + lateReport.undelivered.length,
      destination: outbound,
      timings: { setup: setupMs, deliver: deliverMs, settle: settleMs },
      repick,
      ...(failed && { failover: { ...failoverWindow(failed, answers), missing: missing.length } }),
      dir,
    };
  } finally {
    await stop();
    active.delete(stop);
  }
}
