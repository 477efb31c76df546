// A probe, not the benchmark: the duplicate storm's path taken apart layer by layer (bench/peers/layers.ts), each
// layer a server of its own beside the HMAC floor and `hookledger serve`, interleaved over rounds with the load
// generator and the knobs of `npm run bench`. It prints the medians and each row's rate against the floor's.
// `node --import tsx bench/duplicate-layers.ts` — env BENCH_ROUNDS (3), BENCH_LAYERS (raw,raw-deferred,receive,
// handler), and the bench's own knobs (docs/benchmarks.md, "Knobs").
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { hookledgerServe, rawHmac, startPeer } from "./contenders/http.js";
import { runRounds } from "./contenders/rounds.js";
import { benchSecret, loadRun } from "./contenders/loadgen-run.js";
import type { Contender, RunContext, RunResult } from "./contenders/types.js";
import { stopChild } from "./lib/child.js";
import { pgPort } from "./lib/cpu.js";
import { benchEnv } from "./lib/env.js";
import { dropSchema, freshSchema } from "./lib/schemas.js";
import { fmt, summarize, summaryTable } from "./report.js";

const env = benchEnv({ BENCH_ROUNDS: "3", ...process.env });
const root = fileURLToPath(new URL("..", import.meta.url));
const logDir = join(root, "bench", "results", "logs");
const layers = (process.env.BENCH_LAYERS ?? "raw,raw-deferred,receive,handler").split(",");

function layerContender(layer: string): Contender {
  const name = `layer ${layer}: duplicate storm`;
  return {
    name,
    rows: [[name, "req/s"]],
    async run(ctx: RunContext): Promise<RunResult[]> {
      const schema = await freshSchema(ctx.admin, "layers", false);
      const secret = benchSecret();
      const [server, url] = await startPeer(ctx, "layers.ts", {
        BENCH_LAYER: layer,
        BENCH_SCHEMA: schema,
        BENCH_STRIPE_SECRET: secret,
      });
      const common = { url, path: "/webhooks/stripe", serverPid: server.pid as number, secret };
      try {
        const prefix = `evt_l${ctx.round}`;
        const claimed = await loadRun(ctx, {
          ...common,
          name: `layer ${layer}: claims`,
          mode: "unique",
          prefix,
          count: ctx.env.events + ctx.env.prebuiltRate * 4,
          seconds: 3,
          warmupSeconds: 1,
          expect: '"status":"accepted"',
          expectId: true,
        });
        const cycle = Math.min(claimed.load.sent, ctx.env.events);
        server.kill("SIGUSR2");
        const { run } = await loadRun(ctx, {
          ...common,
          name,
          mode: "cycle",
          prefix,
          count: cycle,
          offset: claimed.load.sent - cycle,
          expect: '"status":"duplicate"',
          expectId: true,
        });
        return [{ ...run, notes: [...run.notes, `cycling over ${cycle} claimed events`] }];
      } finally {
        await stopChild(server);
        await dropSchema(ctx.admin, schema);
      }
    },
  };
}

mkdirSync(logDir, { recursive: true });
const admin = new pg.Client({ connectionString: env.url, application_name: "hookledger-bench" });
await admin.connect();
try {
  const contenders = [rawHmac, ...layers.map(layerContender), hookledgerServe];
  const results = await runRounds(contenders, { env, admin, pgPort: pgPort(env.url), logDir, root });
  const rows = summarize(results).filter((r) => !r.name.endsWith("unique"));
  console.log(`\nmedians over ${env.rounds} rounds\n${summaryTable(rows)}`);
  const floor = rows.find((r) => r.name === "raw node:http + HMAC")?.perSecond;
  for (const r of rows) console.log(`  ${r.name}: ${fmt(floor && r.perSecond / floor, 2)}× the floor`);
} finally {
  await admin.end();
}
