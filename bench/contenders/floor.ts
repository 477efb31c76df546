// The floor contender (bench/peers/floor.ts): the least a correct receiver must do, into the tables of a schema
// that hookledger's own migrations made, so its rows are the ledger's rows.
import { createPool, migrate } from "hookledger";
import { stopChild } from "../lib/child.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { count, rss, startPeer, uniqueBodies } from "./http.js";
import { answeredOk, benchSecret, loadRun, withProblems } from "./loadgen-run.js";
import type { Contender } from "./types.js";

/**
 * The floor: raw node:http, HMAC, a batched multi-row claim answered after its commit, nothing else.
 *
 * @example
 * const [row] = await floor.run(ctx);
 */
export const floor: Contender = {
  name: "floor",
  rows: [["floor: HMAC + batched claim", "req/s"]],
  async run(ctx) {
    const schema = await freshSchema(ctx.admin, "floor", false);
    try {
      const pool = createPool({ connectionString: ctx.env.url, role: "admin", max: 1 });
      try {
        await migrate(pool, schema);
      } finally {
        await pool.end();
      }
      const secret = benchSecret();
      const [server, url] = await startPeer(ctx, "floor.ts", {
        BENCH_SCHEMA: schema,
        BENCH_STRIPE_SECRET: secret,
      });
      try {
        const { run, load } = await loadRun(ctx, {
          name: "floor: HMAC + batched claim",
          url,
          path: "/webhooks/stripe",
          serverPid: server.pid as number,
          secret,
          mode: "unique",
          prefix: `evt_f${ctx.round}`,
          count: uniqueBodies(ctx),
          expect: '"received":true',
          expectId: false,
        });
        const rows = await count(ctx, `${schema}.events`);
        const ok = answeredOk(load);
        return [
          withProblems(run, rows === ok ? [] : [`${rows} ledger rows for ${ok} answers 200`], {
            peakRssMB: rss(server),
          }),
        ];
      } finally {
        await stopChild(server);
      }
    } finally {
      await dropSchema(ctx.admin, schema);
    }
  },
};
