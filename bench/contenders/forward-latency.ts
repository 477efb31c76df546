// The forwarding latency contenders (docs/benchmarks.md, "Forwarding"): events arrive at a steady rate
// (bench/peers/forward-paced.ts) and are forwarded with `ordering: "entity"` to the local destination; the figure
// is the delivery latency of each event, from its claim's commit to the destination's 2xx, for the entities whose
// deliveries succeed. Run twice: with every entity healthy, and with 1 % of the entities failing every attempt
// (500), whose retries must not delay the others (no head-of-line blocking).
import { randomBytes } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { nextMessage, stopChild } from "../lib/child.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { percentile } from "../lib/stats.js";
import { ROWS } from "../report.js";
import { child, resetDestination, withDestination } from "./forward.js";
import { benchSecret } from "./loadgen-run.js";
import type { Contender, RunContext, RunResult } from "./types.js";

/** 300 events/s for 20 s over 600 entities: 10 events per entity, at about a third of the forward's throughput. */
const RATE = 300;
const SECONDS = 20;
const ENTITIES = 600;
/** Every 100th entity fails: 1 %. */
const FAIL_EVERY = 100;

async function paced(
  ctx: RunContext,
  destination: ChildProcess,
  url: string,
  name: string,
  failEvery: number,
): Promise<RunResult> {
  await resetDestination(destination, { failEvery, entities: ENTITIES, record: true });
  const schema = await freshSchema(ctx.admin, "fwp", false);
  const peer = child(
    ctx,
    "forward-paced.ts",
    {
      BENCH_SCHEMA: schema,
      BENCH_STRIPE_SECRET: benchSecret(),
      BENCH_FORWARD_URL: url,
      BENCH_FORWARD_SECRET: `whsec_${randomBytes(32).toString("base64")}`,
      BENCH_PACED_RATE: String(RATE),
      BENCH_PACED_SECONDS: String(SECONDS),
      BENCH_PACED_ENTITIES: String(ENTITIES),
    },
    `forward-paced-${failEvery}`,
  );
  try {
    await nextMessage(peer, (m) => m.phase === "ready", 120_000, `${name}: setup`);
    const began = performance.now();
    const claimed = nextMessage<{ phase: string; claimedAt: number[] }>(
      peer,
      (m) => m.phase === "claimed",
      SECONDS * 1000 + 120_000,
      `${name}: claims`,
    );
    peer.send("go");
    const { claimedAt } = await claimed;
    const healthy = claimedAt
      .map((at, i) => ({ id: `evt_w_${i}`, at }))
      .filter((_, i) => failEvery === 0 || (i % ENTITIES) % failEvery !== 0);
    let arrivals = new Map<string, number>();
    const deadline = performance.now() + 60_000;
    while (performance.now() < deadline) {
      const answer = nextMessage<{ phase: string; arrivals: [string, number][] }>(
        destination,
        (m) => m.phase === "arrivals",
        10_000,
        "destination arrivals",
      );
      destination.send({ cmd: "arrivals" });
      arrivals = new Map((await answer).arrivals);
      if (healthy.every((e) => arrivals.has(e.id))) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const seconds = (performance.now() - began) / 1000;
    const latencies = healthy.flatMap((e) => {
      const at = arrivals.get(e.id);
      return at === undefined ? [] : [at - e.at];
    });
    const missing = healthy.length - latencies.length;
    peer.send("stop");
    return {
      name,
      round: ctx.round,
      unit: "events/s",
      valid: missing === 0,
      problems:
        missing === 0 ? [] : [`${missing} healthy events not delivered within 60 s of the last claim`],
      ops: latencies.length,
      seconds,
      perSecond: latencies.length / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      notes: [
        `${claimedAt.length} events at ${RATE}/s over ${ENTITIES} entities; latency of the ${healthy.length} of healthy entities`,
      ],
    };
  } finally {
    await stopChild(peer);
    await dropSchema(ctx.admin, schema);
  }
}

/**
 * Forwarding latency with and without 1 % of the entities failing every attempt, in one run.
 *
 * @example
 * const [healthy, failing] = await forwardLatency.run(ctx);
 */
export const forwardLatency: Contender = {
  name: "forward-latency",
  rows: [
    [ROWS.forwardLatency, "events/s"],
    [ROWS.forwardLatencyFailing, "events/s"],
  ],
  run: (ctx) =>
    withDestination(ctx, "forward-latency-destination", async (destination, url) => [
      await paced(ctx, destination, url, ROWS.forwardLatency, 0),
      await paced(ctx, destination, url, ROWS.forwardLatencyFailing, FAIL_EVERY),
    ]),
};
