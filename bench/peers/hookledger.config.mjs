// The configuration `npm run bench` starts `hookledger serve --no-worker` with: one Stripe source whose secret the
// bench sets in BENCH_STRIPE_SECRET. DATABASE_URL and HOOKLEDGER_SCHEMA come from the environment too.
import { defineConfig, env } from "hookledger";

export default defineConfig({
  sources: [{ name: "stripe", provider: "stripe", secrets: [env("BENCH_STRIPE_SECRET")] }],
});
