// A probe, not the benchmark: CPU per claim and claims/s of the batched claim against the single claim, with 64
// concurrent callers in one process and no HTTP. CPU is this process's (process.cpuUsage) plus the server
// backends' of each pool (/proc/<pid>/stat, so the server must run on this machine).
// `node --import tsx bench/claim-batch-probe.ts` — env DATABASE_URL, PROBE_OPS (8000), PROBE_CALLERS (64),
// PROBE_MODES (single,batch1,batch2,batch4,batch8), PROBE_ROUNDS (3: modes interleaved, to spread the noise).
// PROBE_VARIANTS compares ledgers with indexes dropped, each in its own schema, interleaved in every round:
// `name:index+index,…`, e.g. `012:,none:events_received+events_troubled+events_entity+events_type` (an empty list
// keeps every index). Unset: one ledger as migrated.
import { randomBytes } from "node:crypto";
import { createPool, quoteIdent } from "../src/db/pool.js";
import { migrate } from "../src/db/migrate.js";
import { claimEvent, type ClaimInput, type ClaimResult } from "../src/ledger/claim.js";
import { claimBatcher } from "../src/ledger/claim-batch.js";
import { type LedgerContext, ledgerContext } from "../src/ledger/context.js";
import { notifyThrottle } from "../src/ledger/notify.js";
import { silentLogger } from "../src/log.js";
import { stripeProvider } from "../src/providers/stripe.js";
import { backendPids, backendSeconds } from "./lib/backends.js";
import { stripeBody, stripeSignature } from "./lib/stripe.js";

// The claims the edge would make of `count` signed 2 KB Stripe events: verified by the provider, as the edge does.
function buildEvents(prefix: string, count: number, bytes: number, source: string, secret: string) {
  const provider = stripeProvider();
  return Array.from({ length: count }, (_, i) => {
    const id = `${prefix}_${i}`;
    const body = Buffer.from(
      stripeBody({ id, subscription: `sub_${i}`, created: 1_767_225_600, status: "active" }, bytes),
    );
    const now = Date.now();
    const headers = new Headers({
      "stripe-signature": stripeSignature(body, secret, Math.floor(now / 1000)),
    });
    const verified = provider.verify({ body, headers, secrets: [secret], now });
    if (!verified.ok || !("event" in verified))
      throw new Error(`probe event ${id} does not verify as an event`);
    const claim: ClaimInput = {
      source,
      event: verified.event,
      body,
      headers: {},
      secretIndex: verified.secretIndex,
      arrivedVia: "delivery",
    };
    return { id, claim };
  });
}

const url = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const ops = Number(process.env.PROBE_OPS ?? 8000);
const callers = Number(process.env.PROBE_CALLERS ?? 64);
const rounds = Number(process.env.PROBE_ROUNDS ?? 3);
const modes = (process.env.PROBE_MODES ?? "single,batch1,batch2,batch4,batch8").split(",");
const variants = (process.env.PROBE_VARIANTS ?? "migrated:").split(",").map((v) => {
  const [name = "", drops = ""] = v.split(":");
  return {
    name,
    drops: drops.split("+").filter((d) => d !== ""),
    schema: `probe_${randomBytes(4).toString("hex")}`,
  };
});
const log = silentLogger();
const admin = createPool({ connectionString: url, role: "admin", max: 2 });

interface Row {
  mode: string;
  perSec: number;
  nodeUs: number;
  pgUs: number;
  statements: number;
  p99: number;
}

async function phase(
  mode: string,
  round: number,
  expect: "accepted" | "duplicate",
  ledger: LedgerContext,
): Promise<Row> {
  const batch = mode.startsWith("batch") ? Number(mode.slice(5)) : 0;
  const max = batch > 0 ? Math.max(batch, 10) : callers;
  const pool = createPool({ connectionString: url, role: "ingest", max, statementTimeoutMs: 30_000 });
  let statements = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  Object.assign(pool, {
    query: (...args: unknown[]) => {
      statements++;
      return query(...args);
    },
  });
  const pids = await backendPids(pool, max);
  const wakeups = notifyThrottle(pool, ledger, log);
  const batcher = claimBatcher({ db: pool, ledger, log, wakeups, maxBatches: batch || 1 });
  const claim = (input: ClaimInput): Promise<ClaimResult> => {
    if (batch > 0) return batcher.claim(input);
    const notify = wakeups.claimNotifies();
    return claimEvent(pool, ledger, { ...input, notify }).then((r) => {
      if (!notify && r.status === "accepted") wakeups.committedQuietly();
      return r;
    });
  };
  const events = buildEvents(`evt_${mode}_${round}`, ops, 2048, "stripe", "whsec_probe");
  if (expect === "duplicate") {
    const preload = claimBatcher({ db: pool, ledger, log, maxBatches: 4 });
    await Promise.all(events.map((e) => preload.claim(e.claim)));
  }
  statements = 0;
  const latencies: number[] = [];
  let next = 0;
  const cpu = process.cpuUsage();
  const pg = backendSeconds(pids);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next < events.length) {
        const e = events[next++] as (typeof events)[number];
        const t = performance.now();
        const r = await claim(e.claim);
        latencies.push(performance.now() - t);
        if (r.status !== expect) throw new Error(`${e.id}: ${r.status}, expected ${expect}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const pgSeconds = backendSeconds(pids) - pg;
  await pool.end();
  latencies.sort((a, b) => a - b);
  return {
    mode: `${mode}${expect === "duplicate" ? " dup" : ""}`,
    perSec: Math.round(ops / seconds),
    nodeUs: Math.round((used.user + used.system) / ops),
    pgUs: Math.round((pgSeconds * 1e6) / ops),
    statements,
    p99: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0),
  };
}

try {
  for (const v of variants) {
    await migrate(admin, v.schema);
    for (const index of v.drops) await admin.query(`drop index ${quoteIdent(v.schema)}.${quoteIdent(index)}`);
  }
  console.log(`probe: ${ops} claims per phase, ${callers} callers, 2 KB Stripe events, ${rounds} rounds`);
  const named = variants.length > 1;
  console.log(
    `${named ? "ledger".padEnd(12) : ""}mode            claims/s  node µs/claim  pg µs/claim  statements  p99 ms`,
  );
  for (let round = 0; round < rounds; round++) {
    for (const expect of ["accepted", "duplicate"] as const) {
      for (const mode of modes) {
        const shift = round % variants.length;
        for (const v of [...variants.slice(shift), ...variants.slice(0, shift)]) {
          const r = await phase(mode, round, expect, ledgerContext(v.schema));
          console.log(
            `${named ? v.name.padEnd(12) : ""}${r.mode.padEnd(15)} ${String(r.perSec).padStart(8)}  ${String(r.nodeUs).padStart(13)}  ${String(r.pgUs).padStart(11)}  ${String(r.statements).padStart(10)}  ${String(r.p99).padStart(6)}`,
          );
        }
      }
    }
  }
} finally {
  for (const v of variants) await admin.query(`drop schema if exists ${quoteIdent(v.schema)} cascade`);
  await admin.end();
}
