// The forwarding contenders (docs/benchmarks.md, "Forwarding"): BENCH_EVENTS claimed events delivered to one
// local destination that answers 200 at once (bench/peers/destination.ts), three ways, each timed from "go" until
// the destination holds every event:
// - the destination's ceiling: the same bodies from memory, POSTed by fetch under the same concurrency limit;
// - a fetch loop (bench/peers/fetch-loop.ts), the relay a user would write: read 256 bodies, POST, mark;
// - hookledger's worker with the source's `forward` (and its handler's version-guarded write, as in P3): each
//   event run, its forward written in the event's transaction, then leased, signed, sent and settled.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { nextMessage, spawnChild, stopChild } from "../lib/child.js";
import { CpuTracker } from "../lib/cpu.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { backlogPendingSql } from "../lib/worker-ledger.js";
import { ROWS } from "../report.js";
import { benchSecret } from "./loadgen-run.js";
import type { Contender, RunContext, RunResult } from "./types.js";

/** The fetch loop's concurrency limit: hookledger's default forward concurrency per worker process. */
const CONCURRENCY = 32;

interface Count {
  phase: string;
  requests: number;
  distinct: number;
}

/** A peer of the forwarding benches (bench/peers/`script`), with the bench's knobs in its environment. */
export function child(ctx: RunContext, script: string, env: NodeJS.ProcessEnv, label: string): ChildProcess {
  return spawnChild(process.execPath, ["--import", "tsx", join(ctx.root, "bench", "peers", script)], {
    env: {
      ...process.env,
      ...env,
      DATABASE_URL: ctx.env.url,
      BENCH_EVENTS: String(ctx.env.events),
      BENCH_ENTITIES: String(ctx.env.entities),
      BENCH_BODY_BYTES: String(ctx.env.bodyBytes),
      BENCH_FORWARD_CONCURRENCY: String(CONCURRENCY),
    },
    logFile: join(ctx.logDir, `${label}-r${ctx.round}.log`),
    ipc: true,
  });
}

/** Runs `use` with the destination (bench/peers/destination.ts) started, and its URL; stops it after. */
export async function withDestination<T>(
  ctx: RunContext,
  label: string,
  use: (destination: ChildProcess, url: string) => Promise<T>,
): Promise<T> {
  const destination = child(ctx, "destination.ts", {}, label);
  try {
    const { port } = await nextMessage<{ phase: string; port: number }>(
      destination,
      (m) => m.phase === "ready",
      30_000,
      "destination start",
    );
    return await use(destination, `http://127.0.0.1:${port}/hooks`);
  } finally {
    destination.send({ cmd: "stop" });
    await stopChild(destination);
  }
}

/** Empties the destination's counts; `options` may ask it to record arrivals and to fail some entities. */
export async function resetDestination(
  destination: ChildProcess,
  options: { failEvery?: number; entities?: number; record?: boolean } = {},
): Promise<void> {
  const reset = nextMessage(destination, (m) => m.phase === "reset", 10_000, "destination reset");
  destination.send({ cmd: "reset", ...options });
  await reset;
}

async function count(destination: ChildProcess): Promise<Count> {
  const answer = nextMessage<Count>(destination, (m) => m.phase === "count", 10_000, "destination count");
  destination.send({ cmd: "count" });
  return answer;
}

/** One timed run of `script` against the destination, reset first; ends when it holds every event. */
async function deliver(
  ctx: RunContext,
  destination: ChildProcess,
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<RunResult> {
  const { events } = ctx.env;
  await resetDestination(destination);
  const peer = child(ctx, script, env, name.replace(/[^a-z0-9]+/gi, "-").toLowerCase());
  let cpu: CpuTracker | undefined;
  try {
    await nextMessage(peer, (m) => m.phase === "ready", 600_000, `${name}: queueing ${events} events`);
    cpu = new CpuTracker(ctx.admin, () => [peer.pid as number, destination.pid as number], ctx.pgPort);
    await cpu.start();
    const began = performance.now();
    peer.send("go");
    const limitMs = Math.max(120_000, events * 10);
    let got: Count = { phase: "count", requests: 0, distinct: 0 };
    while (performance.now() - began < limitMs) {
      got = await count(destination);
      if (got.distinct >= events) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const seconds = (performance.now() - began) / 1000;
    const split = await cpu.stop();
    const problems: string[] = [];
    if (got.distinct < events) problems.push(`the destination holds ${got.distinct} of ${events} events`);
    peer.send("stop");
    return {
      name,
      round: ctx.round,
      unit: "events/s",
      valid: problems.length === 0,
      problems,
      ops: events,
      seconds,
      perSecond: events / seconds,
      cpu: split,
      notes: [`${got.requests} requests for ${got.distinct} distinct events`],
    };
  } finally {
    cpu?.cancel();
    await stopChild(peer);
  }
}

/**
 * Forwarding throughput: the destination's ceiling, a fetch loop and hookledger's forward, in one run.
 *
 * @example
 * const [ceiling, loop, hookledger] = await forwarding.run(ctx);
 */
export const forwarding: Contender = {
  name: "forward",
  rows: [
    [ROWS.forwardCeiling, "events/s"],
    [ROWS.forwardLoop, "events/s"],
    [ROWS.forward, "events/s"],
  ],
  run: (ctx) =>
    withDestination(ctx, "forward-destination", async (destination, url) => {
      const schemas: string[] = [];
      try {
        const fresh = async (tag: string) => {
          const schema = await freshSchema(ctx.admin, tag, false);
          schemas.push(schema);
          return schema;
        };
        const rows: RunResult[] = [];
        rows.push(
          await deliver(ctx, destination, ROWS.forwardCeiling, "fetch-loop.ts", {
            BENCH_SCHEMA: await fresh("fwc"),
            BENCH_FORWARD_URL: url,
            BENCH_CEILING: "1",
          }),
        );
        rows.push(
          await deliver(ctx, destination, ROWS.forwardLoop, "fetch-loop.ts", {
            BENCH_SCHEMA: await fresh("fwl"),
            BENCH_FORWARD_URL: url,
          }),
        );
        const schema = await fresh("fwh");
        const hookledger = await deliver(ctx, destination, ROWS.forward, "hookledger-worker.ts", {
          BENCH_SCHEMA: schema,
          BENCH_STRIPE_SECRET: benchSecret(),
          BENCH_FORWARD_URL: url,
          BENCH_FORWARD_SECRET: `whsec_${randomBytes(32).toString("base64")}`,
        });
        const { rows: left } = await ctx.admin.query<{ pending: boolean }>(backlogPendingSql(schema));
        rows.push(
          left[0]?.pending
            ? { ...hookledger, valid: false, problems: [...hookledger.problems, "events still pending"] }
            : hookledger,
        );
        return rows;
      } finally {
        for (const schema of schemas) await dropSchema(ctx.admin, schema);
      }
    }),
};
