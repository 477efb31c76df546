// The scale mode's SQL (docs/benchmarks.md, "Scale"): fill a migrated ledger with settled rows, clear what one
// measured run left behind, and the two probes sampled while the steady phases run.
import type pg from "pg";
import { stripeBody } from "../lib/stripe.js";

/** Days the filled rows' received_at and settled_at span, ending 35 days ago (past Stripe's 30-day replay window). */
export const FILL_DAYS = 6;

/**
 * Inserts `rows` settled events into `<schema>.events` in statements of 100,000 rows, then `vacuum analyze` and a checkpoint. Every
 * row carries the same signed-body shape as the load (`bodyBytes` of Stripe JSON, its id made unique), so the
 * bodies compress in TOAST as real JSON does. received_at spreads evenly over {@link FILL_DAYS} days ending 35 days
 * ago; settled_at is a second later.
 *
 * @example
 * await fillSettled(admin, schema, 5_000_000, 2048, (n) => console.log(n));
 */
export async function fillSettled(
  db: pg.ClientBase,
  schema: string,
  rows: number,
  bodyBytes: number,
  progress: (done: number) => void,
): Promise<void> {
  const template = stripeBody(
    { id: "evt_fill_XXXXXXXXXX", subscription: "sub_fill_0", created: 1_700_000_000, status: "active" },
    bodyBytes,
  );
  const step = 100_000;
  // The fill's days get their partitions of event bodies, as the days of a live ledger do (migration 010).
  await db.query(
    `select ${schema}.make_body_partitions(now() - interval '${35 + FILL_DAYS} days', ${FILL_DAYS + 1})`,
  );
  for (let from = 0; from < rows; from += step) {
    const to = Math.min(rows, from + step) - 1;
    await db.query(
      `with f as (
         select 'stripe' as source, b.id, b.raw, r.at, g
           from generate_series($1::bigint, $2::bigint) as g
           cross join lateral (select 'evt_fill_' || lpad(g::text, 10, '0') as id) as i
           cross join lateral (select i.id, convert_to(replace($3::text, 'evt_fill_XXXXXXXXXX', i.id), 'UTF8') as raw) as b
           cross join lateral (select now() - interval '${35 + FILL_DAYS} days'
                                      + (g::float8 / $4::float8) * interval '${FILL_DAYS} days' as at) as r
       ), keys as (
         insert into ${schema}.events
           (source, dedupe_key, event_type, body_sha256, entity_type, entity_id, entity_version, occurred_at, status,
            outcome, attempts, next_attempt_at, received_at, settled_at, arrived_via)
         select source, id, 'customer.subscription.updated', sha256(raw), 'subscription', 'sub_fill_' || (g % 100000),
                g, at, 'settled', 'applied', 1, at, at, at + interval '1 second', 'delivery'
           from f
       )
       insert into ${schema}.event_bodies (source, dedupe_key, received_at, body, payload)
       select source, id, at, raw, convert_from(raw, 'UTF8')::jsonb from f`,
      [from, to, template, rows],
    );
    progress(to + 1);
  }
  await settle(db, schema);
}

// A checkpoint after the vacuum: otherwise the fill's (or the previous run's) WAL is written back during the next
// measured window, and the full ledger's figures pay for the fill. The bodies are vacuumed too: a run's rows are
// deleted from today's partition, which a live ledger never does, and autovacuum finding it holding only dead rows
// left it planned as empty while its pages stayed (reltuples 0): the worker's lock then read the day's whole key
// index for each event of the next run, ~2,000 buffers each, and ran at a fifth of its rate (docs/benchmarks.md, "A
// plan that read the whole day"). Vacuumed here, with nothing running, the partition is truncated and planned from
// its real size.
async function settle(db: pg.ClientBase, schema: string): Promise<void> {
  await db.query(`vacuum analyze ${schema}.events`);
  await db.query(`vacuum analyze ${schema}.event_bodies`);
  await db.query("checkpoint");
}

/**
 * Removes what a measured run added (every row but the filled ones, and the worker's app table), then
 * `vacuum analyze` and a checkpoint, so the next run starts from the same ledger.
 *
 * @example
 * await clearRun(admin, schema);
 */
export async function clearRun(db: pg.ClientBase, schema: string): Promise<void> {
  await db.query(`delete from ${schema}.events where dedupe_key not like 'evt\\_fill\\_%'`);
  await db.query(`delete from ${schema}.event_bodies where dedupe_key not like 'evt\\_fill\\_%'`);
  await db.query(`truncate ${schema}.duplicates, ${schema}.entity_versions`);
  await db.query(`drop table if exists ${schema}.app_subscriptions`);
  await settle(db, schema);
}

/**
 * The pick probe: the worker's due-work scan (docs/architecture.md §3, index events_due) from the worker's floor
 * (docs/architecture.md, "The count starts at a floor"), without its row locks, so that timing it never takes work from the
 * running worker. Returns its wall time in ms.
 *
 * @example
 * const ms = await timePick(probe, schema, (await timeFloor(probe, schema)).floor);
 */
export async function timePick(
  db: pg.ClientBase,
  schema: string,
  floor: Date | "-infinity",
): Promise<number> {
  const began = performance.now();
  await db.query(
    `select seq from ${schema}.events where status in ('pending', 'failed') and next_attempt_at <= now()
      and next_attempt_at >= $1::timestamptz
      order by next_attempt_at limit 50`,
    [floor],
  );
  return performance.now() - began;
}

/**
 * The worker's floor as it takes it every 5 s (src/ledger/due-floor.ts): the oldest due time, or 1 s before now when
 * none is older. Returns the floor and the statement's wall time in ms.
 *
 * @example
 * const { floor, ms } = await timeFloor(probe, schema);
 */
export async function timeFloor(db: pg.ClientBase, schema: string): Promise<{ floor: Date; ms: number }> {
  const began = performance.now();
  const { rows } = await db.query<{ floor: Date }>(
    `select least((select next_attempt_at from ${schema}.events
      where status in ('pending', 'failed') and next_attempt_at <= now() order by next_attempt_at limit 1),
      now() - interval '1 second') as floor`,
  );
  const floor = rows[0]?.floor;
  if (!floor) throw new Error("the floor query returned no row");
  return { floor, ms: performance.now() - began };
}

/**
 * Dead tuples of `<schema>.events` as the statistics collector last saw them.
 *
 * @example
 * const dead = await deadTuples(admin, schema);
 */
export async function deadTuples(db: pg.ClientBase, schema: string): Promise<number> {
  const { rows } = await db.query<{ n: string | null }>(
    "select n_dead_tup as n from pg_stat_user_tables where schemaname = $1::text and relname = 'events'",
    [schema],
  );
  return Number(rows[0]?.n ?? 0);
}
