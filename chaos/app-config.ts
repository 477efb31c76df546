import { pathToFileURL } from "node:url";

/** Faults planted on purpose, to prove the oracle fails when it must. */
export type Plant = "none" | "duplicate" | "lose" | "reorder" | "resend" | "unordered";

/** Every plant, for the runner's check of CHAOS_PLANT. */
export const PLANTS: readonly Plant[] = ["none", "duplicate", "lose", "reorder", "resend", "unordered"];

/** The app's schema: what the handler wrote, for the oracle to count. */
export const APP_SCHEMA = "chaos_app";
export const SOURCE = "chaos";
export const SECRET = "whsec_chaos_secret";
/** The Standard Webhooks secret the source's forwards are signed with, which the destination verifies. */
export const FORWARD_SECRET = "whsec_Y2hhb3MtZm9yd2FyZC1zZWNyZXQtMzItYnl0ZXMh";

/** The app's tables: every run of the handler (applied or skipped as stale) and each entity's state. */
export const APP_DDL = `
create schema if not exists ${APP_SCHEMA};
create table ${APP_SCHEMA}.applications (
  seq bigserial primary key,
  event_id text not null,
  entity text not null,
  version numeric not null,
  stale boolean not null,
  attempt int not null,
  applied_at timestamptz not null default clock_timestamp()
);
create table ${APP_SCHEMA}.entities (
  id text primary key,
  version numeric not null,
  event_id text not null
);`;

/** The event that the `duplicate` plant applies twice. */
export const DUPLICATE_TARGET = "evt_0";

/**
 * The `hookledger.config.mjs` every receiver and worker loads. Its handler applies a versioned entity update with
 * `ctx.advance()` and records every run in `applications` inside `ctx.tx`, so a committed application is exactly
 * a committed attempt. A plant breaks one rule on purpose:
 * - `duplicate`: the first attempt of {@link DUPLICATE_TARGET} writes its application outside `ctx.tx`, then
 *   throws; the retry applies it again.
 * - `reorder`: the guard's answer is ignored, so a stale version is applied over a newer one.
 * - `resend`: the outbox's sender ignores its idempotency key and sends a fresh one on every call, so a message
 *   whose answer was lost is applied again by the destination.
 * - `unordered`: the source forwards with `ordering: "none"`, so an entity's older event can reach the
 *   destination after a newer one.
 *
 * The source also forwards every event to `forwardUrl` (`ordering: "entity"`), signed with {@link FORWARD_SECRET}.
 * An applied (fresh) event also sends `{ event: id }` with `ctx.outbox.send("remote", …)` to `destinationUrl`, and
 * one first attempt in ten throws after that send: rolled back, it must leave no message behind.
 */
export function appConfig(
  distIndex: string,
  plant: Plant,
  destinationUrl: string,
  forwardUrl: string,
): string {
  return `import { createPool, defineConfig, env, Handlers, httpSender, Outbox } from ${JSON.stringify(pathToFileURL(distIndex).href)};
import { randomUUID } from "node:crypto";

const plant = ${JSON.stringify(plant)};
const destination = ${JSON.stringify(destinationUrl)};
let outside;

// The planted sender: the same POST as httpSender's, under a new key on every call.
const resend = async (message, { signal }) => {
  const answer = await fetch(destination, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": randomUUID() },
    body: JSON.stringify(message.payload),
    signal,
  });
  if (!answer.ok) throw new Error("HTTP " + answer.status);
};

export default defineConfig({
  database: { url: env("DATABASE_URL") },
  sources: [
    {
      name: ${JSON.stringify(SOURCE)},
      provider: "stripe",
      secrets: [${JSON.stringify(SECRET)}],
      forward: {
        url: ${JSON.stringify(forwardUrl)},
        secret: ${JSON.stringify(FORWARD_SECRET)},
        ordering: ${JSON.stringify(plant === "unordered" ? "none" : "entity")},
        timeoutMs: 2000,
        retry: { maxAttempts: 60, baseDelayMs: 100, maxDelayMs: 2000 },
        // The storms open the breaker; pauses this short keep the run within its settle deadline.
        breaker: { threshold: 10, pauseMs: 500, maxPauseMs: 2000 },
      },
    },
  ],
  handlers: new Handlers().on(${JSON.stringify(SOURCE)}, "*", async (ctx) => {
    const { id, entity, attempt } = ctx.event;
    if (!entity) throw new Error("chaos events all carry an entity");
    // A little await between statements, so faults also find transactions idle between queries.
    await new Promise((r) => setTimeout(r, Math.random() * 3));
    const fresh = await ctx.advance();
    const apply = fresh || plant === "reorder";
    const record = [id, entity.id, entity.version, !apply, attempt];
    const insert = "insert into ${APP_SCHEMA}.applications (event_id, entity, version, stale, attempt) values ($1, $2, $3, $4, $5)";
    if (plant === "duplicate" && id === ${JSON.stringify(DUPLICATE_TARGET)} && attempt === 1) {
      outside ??= createPool({ connectionString: process.env.DATABASE_URL, role: "admin", max: 1 });
      await outside.query(insert, record);
      throw new Error("planted: applied outside ctx.tx, then failed");
    }
    await ctx.tx.query(insert, record);
    if (!apply) return;
    await ctx.tx.query(
      "insert into ${APP_SCHEMA}.entities (id, version, event_id) values ($1, $2, $3) on conflict (id) do update set version = excluded.version, event_id = excluded.event_id",
      [entity.id, entity.version, id],
    );
    await ctx.outbox.send("remote", { event: id });
    if (attempt === 1 && Number(id.replace(/\\D/g, "")) % 10 === 3) throw new Error("rolled back after its send");
  }),
  outbox: new Outbox({
    timeoutMs: 2000,
    pollIntervalMs: 200,
    retry: { maxAttempts: 60, baseDelayMs: 100, maxDelayMs: 2000 },
  }).on("remote", plant === "resend" ? resend : httpSender({ url: destination, timeoutMs: 2000 })),
  worker: {
    concurrency: 4,
    pollIntervalMs: 200,
    retry: { maxAttempts: 25, baseDelayMs: 100, maxDelayMs: 2000 },
  },
});
`;
}
