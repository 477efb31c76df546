// The floor contender (bench/peers/floor.ts): the least a correct receiver must do, into the tables of a schema
// that hookledger's own migrations made, so its rows are the ledger's rows.
import { createPool, migrate } from "hookledger";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { peerIngest } from "./http.js";
import { ROWS } from "../report.js";
import type { Contender } from "./types.js";

/**
 * The floor: raw node:http, HMAC, a batched multi-row claim answered after its commit, nothing else.
 *
 * @example
 * const [row] = await floor.run(ctx);
 */
export const floor: Contender = {
  name: "floor",
  rows: [[ROWS.floor, "req/s"]],
  async run(ctx) {
    const schema = await freshSchema(ctx.admin, "floor", false);
    try {
      const pool = createPool({ connectionString: ctx.env.url, role: "admin", max: 1 });
      try {
        await migrate(pool, schema);
      } finally {
        await pool.end();
      }
      return await peerIngest(ctx, {
        name: ROWS.floor,
        script: "floor.ts",
        schema,
        prefix: "evt_f",
        table: "events",
      });
    } finally {
      await dropSchema(ctx.admin, schema);
    }
  },
};
