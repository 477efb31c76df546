// The configuration the scale mode's N×M phase (bench/contenders/scale-nxm.ts) starts `hookledger serve --no-worker`
// and `hookledger worker` with: the bench's Stripe source, and a handler that applies each subscription update with
// the version-guarded upsert of bench/peers/app-table.ts and records the application in the same transaction
// (`app_applications`, one row per application, so an event applied twice shows as two rows). Its clock_timestamp()
// is when the attempt's handler began: the phase's pick wait runs from the event's receipt to it.
import { defineConfig, env, Handlers } from "hookledger";

const schema = process.env.HOOKLEDGER_SCHEMA;

export default defineConfig({
  sources: [{ name: "stripe", provider: "stripe", secrets: [env("BENCH_STRIPE_SECRET")] }],
  handlers: new Handlers().on("stripe", "customer.subscription.updated", async (ctx) => {
    const event = ctx.event.payload;
    await ctx.tx.query(
      `insert into ${schema}.app_applications (dedupe_key, attempt) values ($1::text, $2::int)`,
      [ctx.event.id, ctx.event.attempt],
    );
    await ctx.tx.query(
      `insert into ${schema}.app_subscriptions as a (entity_id, version, status) values ($1::text, $2::bigint, $3::text)
       on conflict (entity_id) do update set version = excluded.version, status = excluded.status
       where a.version < excluded.version`,
      [event.data.object.id, event.created, event.data.object.status],
    );
  }),
});
