// The dashboard bench's ledger (docs/benchmarks.md, "The dashboard on a million events"): a migrated schema filled
// with set-based SQL to look like a month of a busy ledger, and the rows the measured requests ask for.
import type pg from "pg";

/** The days received_at spreads over, ending now. */
export const FILL_DAYS = 30;

const OBJECTS = ["invoice", "customer", "subscription", "charge", "payment_intent", "order", "pull_request"];
const VERBS = ["created", "updated", "paid", "deleted", "failed", "succeeded", "closed"];
/** 49 types, the first the most common: type k of 49 is drawn as ⌊49·u⁴⌋, so the first takes ~38 % of events. */
export const TYPES = OBJECTS.flatMap((o) => VERBS.map((v) => `${o}.${v}`));
/** The 50th type: one event in 20,000 (50 of a million), spread over the whole month. */
export const RARE_TYPE = "charge.dispute.funds_reinstated";
const SOURCES = ["stripe", "stripe", "stripe", "stripe", "github", "github", "shopify", "paddle"];
const ENTITY_TYPES = ["customer", "subscription", "invoice", "order", "pull_request"];

/**
 * Inserts `rows` events into `<schema>.events` and their bodies into `event_bodies` (the days' partitions made
 * first by the ledger's `make_body_partitions`), in statements of 100,000 rows; then the entity versions the guard
 * would have applied, the failed attempts of failed and dead events, per-minute delivery counts, `vacuum analyze`
 * and a checkpoint. Statuses: 99.5 % settled (90 % applied, 5 % stale, 5 % unhandled), 0.2 % pending, 0.15 % failed,
 * 0.15 % dead. 80 % of events name one of 100,000 entities, versions increasing with received_at.
 *
 * @example
 * await fillLedger(admin, schema, 1_000_000, (n) => console.log(n));
 */
export async function fillLedger(
  db: pg.ClientBase,
  schema: string,
  rows: number,
  progress: (done: number) => void,
): Promise<void> {
  await db.query(
    `select ${schema}.make_body_partitions(now() - interval '${FILL_DAYS} days', ${FILL_DAYS + 1})`,
  );
  await db.query("select setseed(0.42)");
  const step = 100_000;
  for (let from = 1; from <= rows; from += step) {
    const to = Math.min(rows, from + step - 1);
    await db.query(
      `with f as materialized (
         select g, 'evt_' || lpad(g::text, 9, '0') as id,
           ($5::text[])[1 + g % ${SOURCES.length}] as source,
           case when g % 20000 = 7 then $4::text
                else ($3::text[])[1 + floor(49 * power(random(), 4))::int] end as type,
           case when g % 5 = 0 then null else ($6::text[])[1 + g % ${ENTITY_TYPES.length}] end as entity_type,
           'ent_' || ((g * 7919) % 100000) as entity_id,
           now() - interval '${FILL_DAYS} days' + (g::float8 / $2::float8) * interval '${FILL_DAYS} days' as at,
           random() as r, random() as r2
         from generate_series($1::bigint, $7::bigint) as g
       ), s as (
         select f.*,
           case when r < 0.002 then 'pending' when r < 0.0035 then 'failed' when r < 0.005 then 'dead'
                else 'settled' end as status,
           jsonb_build_object('id', id, 'type', type, 'created', extract(epoch from at)::bigint,
             'data', jsonb_build_object('object', jsonb_build_object('id', entity_id, 'object', entity_type,
               'amount', (r2 * 100000)::int, 'currency', 'eur',
               'description', repeat(md5(id), 24)))) as payload
         from f
       ), keys as (
         insert into ${schema}.events
           (source, dedupe_key, event_type, body_sha256, entity_type, entity_id, entity_version, occurred_at, status,
            outcome, attempts, last_error, next_attempt_at, received_at, settled_at, arrived_via)
         select source, id, type, sha256(convert_to(payload::text, 'UTF8')), entity_type,
           case when entity_type is null then null else entity_id end,
           case when entity_type is null then null else g end, at, status,
           case when status <> 'settled' then null when r2 < 0.9 then 'applied' when r2 < 0.95 then 'stale'
                else 'unhandled' end,
           case status when 'pending' then 0 when 'failed' then 2 when 'dead' then 10 else 1 end,
           case when status in ('failed', 'dead')
                then 'Error: the handler broke' || chr(10) || '    at handler (app.js:12:7)' end,
           case when status in ('pending', 'failed') then at + interval '1 minute' else at end,
           at, case when status = 'settled' then at + r2 * interval '5 seconds' end, 'delivery'
         from s
       )
       insert into ${schema}.event_bodies (source, dedupe_key, received_at, body, payload)
       select source, id, at, convert_to(payload::text, 'UTF8'), payload from s`,
      [from, rows, TYPES, RARE_TYPE, SOURCES, ENTITY_TYPES, to],
    );
    progress(to);
  }
  await db.query(
    `insert into ${schema}.entity_versions (entity_type, entity_id, version, source, dedupe_key, applied_at,
       received_at, seq)
     select distinct on (entity_type, entity_id) entity_type, entity_id, entity_version, source, dedupe_key,
       settled_at, received_at, seq
     from ${schema}.events where outcome = 'applied' and entity_id is not null
     order by entity_type, entity_id, entity_version desc`,
  );
  await db.query(
    `insert into ${schema}.attempt_errors (source, dedupe_key, attempt, failed_at, error)
     select e.source, e.dedupe_key, a, e.received_at + a * interval '1 minute', e.last_error
     from ${schema}.events e cross join generate_series(1, e.attempts) a
     where e.status in ('failed', 'dead')`,
  );
  await db.query(
    `insert into ${schema}.delivery_stats (source, minute, accepted, duplicates)
     select source, date_trunc('minute', received_at), count(*), count(*) / 20
     from ${schema}.events group by 1, 2`,
  );
  for (const table of ["events", "event_bodies", "entity_versions", "attempt_errors", "delivery_stats"])
    await db.query(`vacuum analyze ${schema}.${table}`);
  await db.query("checkpoint");
}

/** The rows the measured requests ask for, read from the filled ledger. */
export interface Targets {
  readonly oldDay: { readonly since: string; readonly until: string };
  readonly settled: { readonly source: string; readonly key: string };
  readonly dead: { readonly source: string; readonly key: string };
  readonly entity: string;
  readonly searchId: string;
}

/**
 * Picks the events and the entity the requests use: a settled and a dead event with an entity history (the dead
 * one's entity with the longest), a day 20 days back.
 *
 * @example
 * const targets = await pickTargets(admin, schema);
 */
export async function pickTargets(db: pg.ClientBase, schema: string): Promise<Targets> {
  const one = async (sql: string) => {
    const { rows } = await db.query<{ source: string; key: string; entity: string }>(sql);
    if (!rows[0]) throw new Error(`the filled ledger has no row for: ${sql}`);
    return rows[0];
  };
  const dead = await one(
    `select source, dedupe_key as key, entity_type || ':' || entity_id as entity from ${schema}.events
     where status = 'dead' and entity_id is not null order by seq limit 1`,
  );
  const settled = await one(
    `select source, dedupe_key as key, entity_type || ':' || entity_id as entity from ${schema}.events
     where status = 'settled' and entity_id is not null and seq > (select max(seq) / 2 from ${schema}.events)
     order by seq limit 1`,
  );
  const day = new Date(Date.now() - 20 * 86_400_000);
  day.setUTCHours(0, 0, 0, 0);
  return {
    oldDay: { since: day.toISOString(), until: new Date(day.getTime() + 86_400_000).toISOString() },
    settled: { source: settled.source, key: settled.key },
    dead: { source: dead.source, key: dead.key },
    entity: dead.entity,
    searchId: settled.key,
  };
}
