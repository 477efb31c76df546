// `npm run chaos`: one chaos run against the built package (docs/chaos.md). Exits 1 on any violation.
// CHAOS_TIER=short|long|deep, CHAOS_PLANT=none|duplicate|lose|reorder|resend|unordered, CHAOS_SEED=N, CHAOS_KEEP=1 (keep
// the logs).
import { PLANTS, type Plant } from "./app-config.js";
import { summary } from "./oracle.js";
import { abortAll, type ChaosOptions, runChaos } from "./run.js";
import { TIERS } from "./tiers.js";

const tierName = process.env.CHAOS_TIER ?? "short";
const tier = TIERS[tierName];
const plant = (process.env.CHAOS_PLANT ?? "none") as Plant;
if (!tier || !PLANTS.includes(plant)) {
  console.error(
    `CHAOS_TIER is ${Object.keys(TIERS).join(", ")} (${tierName}); CHAOS_PLANT is ${PLANTS.join("|")} (${plant})`,
  );
  process.exit(2);
}
const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
// CHAOS_FAILOVER=host-list|moving-endpoint[:async]: a primary and its standby, the primary killed once, no other fault.
const [shape, sync] = (process.env.CHAOS_FAILOVER ?? "").split(":");
if (shape && shape !== "host-list" && shape !== "moving-endpoint") {
  console.error(`CHAOS_FAILOVER is host-list or moving-endpoint, optionally :async (${shape})`);
  process.exit(2);
}
const failover = shape
  ? { shape: shape as "host-list" | "moving-endpoint", synchronous: sync !== "async", afterMs: 3000 }
  : undefined;

let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\n${signal}: stopping every process, the cluster and the temp dir`);
    void abortAll().finally(() => process.exit(130));
  });
}

const { faults: _faults, ...calm } = tier;
const options: ChaosOptions = {
  ...(failover ? { ...calm, failover } : tier),
  plant,
  seed,
  keep: process.env.CHAOS_KEEP === "1",
  note: (line) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}`),
};
const t0 = Date.now();
console.log(
  `chaos ${tierName}: ${tier.events} events, ${tier.receivers} receivers, ${tier.workers} workers, plant ${plant}, seed ${seed}`,
);
try {
  const result = await runChaos(options);
  const wall = ((Date.now() - t0) / 1000).toFixed(1);
  console.log(
    `\nfaults: ${JSON.stringify(result.faults)} · process restarts ${result.restarts}\n` +
      `provider: ${result.providerPosts} POSTs ${JSON.stringify(result.providerStatuses)}, never acknowledged ${result.undelivered}\n` +
      `destination: ${result.destination.requests} requests ${JSON.stringify(result.destination.statuses)}\n` +
      `timings: setup ${result.timings.setup} ms, deliver+faults ${result.timings.deliver} ms, settle ${result.timings.settle} ms, wall ${wall} s\n` +
      `re-pick after a fault: ${result.repick.unrecorded} unrecorded attempts, p50 ${result.repick.p50Ms} ms, p95 ${result.repick.p95Ms} ms, max ${result.repick.maxMs} ms; backlog peak ${result.repick.peakBacklog} events`,
  );
  const f = result.failover;
  if (f) {
    console.log(
      `failover (${failover?.synchronous ? "synchronous" : "asynchronous"} standby): promoted ${f.promotedMs} ms after the kill; ` +
        `the first POST accepted after it was sent at +${f.firstAcceptSentMs} ms and answered at +${f.firstAcceptAnsweredMs} ms, ` +
        `the POSTs before it were answered ${JSON.stringify(f.statuses)}; ` +
        `${f.missing} of the ${f.ackedBeforeKill} events acknowledged before the kill missing on the promoted standby`,
    );
  }
  console.log(summary(result.verdict));
  if (options.keep) console.log(`kept ${result.dir}`);
  process.exit(result.verdict.ok ? 0 : 1);
} catch (error) {
  if (!interrupted) {
    console.error("chaos run failed to complete:", error);
    process.exit(1);
  }
}
