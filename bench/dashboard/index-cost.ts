// What the dashboard's indexes cost a claim: `hookledger serve --no-worker` under unique ingest (the bench's
// hookledger-serve window) on a ledger migrated as released, and on the same ledger with indexes dropped or swapped,
// the variants interleaved round by round.
import { createPool } from "hookledger";
import { migrate } from "hookledger";
import { stopChild } from "../lib/child.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { median } from "../lib/stats.js";
import { startServe } from "../contenders/http.js";
import { answeredOk, loadRun, withProblems } from "../contenders/loadgen-run.js";
import type { RunContext, RunResult } from "../contenders/types.js";

/** A ledger's index set: the statements run after the migrations, `:s` the schema. */
export interface Variant {
  readonly name: string;
  readonly ddl: readonly string[];
}

const DROP_012 = [
  "drop index :s.events_received",
  "drop index :s.events_troubled",
  "drop index :s.events_entity",
  "drop index :s.events_type",
];

/** The variants every round measures: migration 012 as it is, without its type index, and without its four. */
export const VARIANTS: readonly Variant[] = [
  { name: "012's indexes", ddl: [] },
  { name: "012 without events_type", ddl: ["drop index :s.events_type"] },
  { name: "none of 012's on events", ddl: DROP_012 },
];

/** One variant's runs and medians. */
export interface CostLine {
  readonly variant: string;
  readonly runs: readonly RunResult[];
  readonly perSecond: number;
  /** Server process + its backends, CPU µs per request. */
  readonly cpuUsPerOp: number;
  readonly backendsUsPerOp: number;
}

/**
 * Runs each variant once per round, the order rotated by the round, and returns their medians over valid runs.
 *
 * @example
 * const lines = await measureIndexCost(ctx, VARIANTS, 3, (r) => console.log(r.name, r.perSecond));
 */
export async function measureIndexCost(
  ctx: Omit<RunContext, "round">,
  variants: readonly Variant[],
  rounds: number,
  report: (variant: string, run: RunResult) => void,
): Promise<CostLine[]> {
  const runs = new Map<string, RunResult[]>(variants.map((v) => [v.name, []]));
  for (let round = 1; round <= rounds; round++) {
    const shift = (round - 1) % variants.length;
    for (const v of [...variants.slice(shift), ...variants.slice(0, shift)]) {
      const run = await once({ ...ctx, round }, v);
      report(v.name, run);
      runs.get(v.name)?.push(run);
    }
  }
  return variants.map((v) => {
    const valid = (runs.get(v.name) ?? []).filter((r) => r.valid);
    const per = (f: (r: RunResult) => number) => median(valid.map(f));
    return {
      variant: v.name,
      runs: runs.get(v.name) ?? [],
      perSecond: per((r) => r.perSecond),
      cpuUsPerOp: per((r) => (((r.cpu?.process ?? 0) + (r.cpu?.backends ?? 0)) / r.ops) * 1e6),
      backendsUsPerOp: per((r) => ((r.cpu?.backends ?? 0) / r.ops) * 1e6),
    };
  });
}

async function once(ctx: RunContext, variant: Variant): Promise<RunResult> {
  const schema = await freshSchema(ctx.admin, "dashcost", false);
  try {
    const pool = createPool({ connectionString: ctx.env.url, role: "admin", max: 1 });
    try {
      await migrate(pool, schema);
      for (const statement of variant.ddl) await pool.query(statement.replaceAll(":s", schema));
    } finally {
      await pool.end();
    }
    const { server, url, secret } = await startServe(ctx, "dashcost", { schema });
    try {
      const { run, load } = await loadRun(ctx, {
        name: `unique ingest, ${variant.name}`,
        url,
        path: "/webhooks/stripe",
        serverPid: server.pid as number,
        secret,
        mode: "unique",
        prefix: `evt_c${ctx.round}`,
        count: ctx.env.prebuiltRate * (ctx.env.seconds + ctx.env.warmupSeconds),
        expect: '"status":"accepted"',
        expectId: true,
      });
      const { rows } = await ctx.admin.query<{ n: string }>(`select count(*) as n from ${schema}.events`);
      const claimed = Number(rows[0]?.n);
      const accepted = answeredOk(load);
      return withProblems(
        run,
        claimed === accepted ? [] : [`${claimed} ledger rows for ${accepted} accepted`],
      );
    } finally {
      await stopChild(server);
    }
  } finally {
    await dropSchema(ctx.admin, schema);
  }
}
