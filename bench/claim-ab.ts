// A probe, not the benchmark: the batched claim of this checkout against another checkout's, alternated in one
// process, so both sides see the same machine within seconds of each other. Per side and round: the process's CPU
// per claim (process.cpuUsage), its Postgres backends' (/proc), and claims/s, 64 concurrent callers claiming new
// 2 KB Stripe events verified by each side's own provider, up to 4 batches in flight (the receiver's default).
// `AB_OTHER=<path of another checkout> node --import tsx bench/claim-ab.ts` — env DATABASE_URL, AB_OPS (6000),
// AB_ROUNDS (10). The other checkout needs the same migrations; it is imported from its src/, through tsx.
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { backendPids, backendSeconds } from "./lib/backends.js";
import { median } from "./lib/stats.js";
import { stripeBody, stripeSignature } from "./lib/stripe.js";

const other = process.env.AB_OTHER;
if (!other) throw new Error("set AB_OTHER to the path of the checkout to compare with");
const url = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const ops = Number(process.env.AB_OPS ?? 6000);
const rounds = Number(process.env.AB_ROUNDS ?? 10);

// Each side's own modules: its claim, its pools, its provider (which decides what the event carries).
async function side(root: string) {
  const src = (path: string) => import(resolve(root, "src", path));
  return {
    pool: (await src("db/pool.ts")) as typeof import("../src/db/pool.js"),
    batch: (await src("ledger/claim-batch.ts")) as typeof import("../src/ledger/claim-batch.js"),
    context: (await src("ledger/context.ts")) as typeof import("../src/ledger/context.js"),
    notify: (await src("ledger/notify.ts")) as typeof import("../src/ledger/notify.js"),
    log: (await src("log.ts")) as typeof import("../src/log.js"),
    stripe: (await src("providers/stripe.ts")) as typeof import("../src/providers/stripe.js"),
  };
}
type Side = Awaited<ReturnType<typeof side>>;
const sides: Record<"this" | "other", Side> = { this: await side("."), other: await side(other) };

interface Figures {
  nodeUs: number;
  pgUs: number;
  perSec: number;
}

async function phase(m: Side, schema: string, tag: string): Promise<Figures> {
  const ledger = m.context.ledgerContext(schema);
  const log = m.log.silentLogger();
  const pool = m.pool.createPool({
    connectionString: url,
    role: "ingest",
    max: 10,
    statementTimeoutMs: 30_000,
  });
  const pids = await backendPids(pool, 10);
  const batcher = m.batch.claimBatcher({
    db: pool,
    ledger,
    log,
    wakeups: m.notify.notifyThrottle(pool, ledger, log),
  });
  const provider = m.stripe.stripeProvider();
  const now = Date.now();
  const claims = Array.from({ length: ops }, (_, i) => {
    const body = Buffer.from(
      stripeBody(
        { id: `evt_${tag}_${i}`, subscription: `sub_${i}`, created: 1_767_225_600, status: "active" },
        2048,
      ),
    );
    const headers = new Headers({
      "stripe-signature": stripeSignature(body, "whsec_ab", Math.floor(now / 1000)),
    });
    const verified = provider.verify({ body, headers, secrets: ["whsec_ab"], now });
    if (!verified.ok || !("event" in verified)) throw new Error("a probe event does not verify");
    return {
      source: "stripe",
      event: verified.event,
      body,
      headers: {},
      secretIndex: 0,
      arrivedVia: "delivery" as const,
    };
  });
  let next = 0;
  const cpu = process.cpuUsage();
  const pg = backendSeconds(pids);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < claims.length) {
        const claim = claims[next++] as (typeof claims)[number];
        const answer = await batcher.claim(claim);
        if (answer.status !== "accepted") throw new Error(`${claim.event.dedupeKey}: ${answer.status}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const figures = {
    nodeUs: (used.user + used.system) / ops,
    pgUs: ((backendSeconds(pids) - pg) * 1e6) / ops,
    perSec: ops / seconds,
  };
  await pool.end();
  return figures;
}

const { createPool, quoteIdent } = sides.this.pool;
const { migrate } = (await import("../src/db/migrate.js")) as typeof import("../src/db/migrate.js");
const admin = createPool({ connectionString: url, role: "admin", max: 2 });
const schema = `claim_ab_${randomBytes(4).toString("hex")}`;
const results: Record<keyof typeof sides, Figures[]> = { this: [], other: [] };
try {
  await migrate(admin, schema);
  console.log(
    `claim-ab: ${ops} claims per phase, 64 callers, 2 KB Stripe events, ${rounds} rounds; other: ${other}`,
  );
  for (let round = 0; round < rounds; round++) {
    const order: (keyof typeof sides)[] = round % 2 === 0 ? ["other", "this"] : ["this", "other"];
    for (const name of order) {
      const f = await phase(sides[name], schema, `${name}_${round}`);
      results[name].push(f);
      console.log(
        `round ${round + 1} ${name.padEnd(5)} node ${f.nodeUs.toFixed(1)} µs/claim  pg ${f.pgUs.toFixed(1)} µs/claim  ${Math.round(f.perSec)} claims/s`,
      );
    }
  }
  for (const name of ["other", "this"] as const) {
    const r = results[name];
    console.log(
      `median ${name.padEnd(5)} node ${median(r.map((f) => f.nodeUs)).toFixed(1)} µs/claim  pg ${median(r.map((f) => f.pgUs)).toFixed(1)} µs/claim  ${Math.round(median(r.map((f) => f.perSec)))} claims/s`,
    );
  }
} finally {
  await admin.query(`drop schema if exists ${quoteIdent(schema)} cascade`);
  await admin.end();
}
