// The PgBouncer of the bench's "via PgBouncer" rows: Debian's, in transaction mode, in front of the bench's
// database, as test/once/pgbouncer.test.ts runs it.
import { type Bouncer, startPgbouncer } from "../../test/helpers/pgbouncer.js";
import type { RunContext } from "../contenders/types.js";

/**
 * Starts PgBouncer in transaction mode before `ctx.env.url`, with as many server connections as the receiver's and
 * the worker's pools open straight to Postgres, so that the rows compare the pooler's cost and not a smaller pool.
 *
 * @example
 * const bouncer = await benchPgbouncer(ctx); try { … bouncer.url … } finally { await bouncer.stop(); }
 */
export function benchPgbouncer(ctx: RunContext): Promise<Bouncer> {
  return startPgbouncer({ mode: "transaction", poolSize: 20, target: ctx.env.url });
}
