import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { claimEvent, createPool, getEvent, ledgerContext, migrate, runPrune } from "hookledger";
import { loadMigrations } from "../../src/db/migrate.js";
import { testDatabaseUrl } from "../helpers/db.js";

// Migration 010 moves bodies, payloads and headers out of `events` into `event_bodies`, partitioned by day. A
// ledger built by migrations 001–009 is filled with rows in every state and age, then migrated: every row must read
// back the same, byte for byte, through the `event_records` view.

const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 4 });
const schema = `mb_${randomBytes(5).toString("hex")}`;
const ledger = ledgerContext(schema);
const s = ledger.s;
const DAY = 86_400_000;
after(async () => {
  await pool.query(`drop schema if exists ${s} cascade`);
  await pool.end();
});

// Columns of the ledger before the split, in a stable text form (bytea as hex, times as epoch microseconds).
const ALL = `source, dedupe_key, seq, event_type, encode(body, 'hex') as body, encode(body_sha256, 'hex') as sha,
  dedupe_on_body, payload::text as payload, headers::text as headers, secret_index, entity_type, entity_id,
  entity_version::text as version, occurred_at, status, outcome, attempts, last_error, next_attempt_at, received_at,
  settled_at, arrived_via, attempt_started_at`;

let wideRows: unknown[] = [];

before(async () => {
  await pool.query(`create schema ${s}`);
  await pool.query(
    `create table ${s}.migrations (id integer primary key, name text not null, applied_at timestamptz not null default now())`,
  );
  for (const m of (await loadMigrations()).filter((m) => m.id <= 9)) {
    await pool.query(`begin; set local search_path to ${s}; ${m.sql}; commit`);
    await pool.query(`insert into ${s}.migrations (id, name) values ($1, $2)`, [m.id, m.name]);
  }
  // 3,000 rows: every status, received now, 3 days ago and 100 days ago (older than the migration's 62-day window
  // of day partitions), bodies with bytes that are not UTF-8, GitHub-style body dedupe on some.
  await pool.query(
    `insert into ${s}.events (source, dedupe_key, event_type, body, body_sha256, dedupe_on_body, payload, headers,
       secret_index, entity_type, entity_id, entity_version, occurred_at, status, outcome, attempts, last_error,
       next_attempt_at, received_at, settled_at, arrived_via, attempt_started_at)
     select case when i % 7 = 0 then 'github' else 'stripe' end, 'evt_' || i, 'type.' || (i % 5),
       b, sha256(b), i % 7 = 0, jsonb_build_object('id', 'evt_' || i, 'n', i, 'deep', jsonb_build_object('a', array[i, i])),
       jsonb_build_object('x-request-id', 'req_' || i), (i % 2)::smallint, 'sub', 'sub_' || (i % 50), i * 1.5,
       r - interval '1 minute', st, case when st = 'settled' then 'applied' end, i % 4,
       case when st in ('failed', 'dead') then 'boom ' || i end, r + interval '1 hour', r,
       case when st = 'settled' then r + interval '1 second' end, 'delivery',
       case when st = 'pending' and i % 3 = 0 then r end
     from generate_series(1, 3000) i,
       lateral (select (array['pending', 'failed', 'settled', 'dead', 'inline', 'settled'])[1 + i % 6] as st,
         now() - (array[0, 3, 100])[1 + i % 3] * interval '1 day' - i * interval '1 millisecond' as r,
         decode('ff00fe' || lpad(to_hex(i), 8, '0') || repeat('7a', 300), 'hex') as b) x`,
  );
  wideRows = (await pool.query(`select ${ALL} from ${s}.events order by source, dedupe_key`)).rows;
  // 010 and 011 are the migrations under test; those after them (013_alerts.sql, …) apply on top.
  const later = (await loadMigrations()).filter((m) => m.id >= 10).map((m) => m.name);
  assert.deepEqual(later.slice(0, 2), ["010_event_bodies.sql", "011_body_compression.sql"]);
  assert.deepEqual(await migrate(pool, schema), later);
});

test("migration 010 keeps every row of an existing ledger byte for byte, readable through event_records", async () => {
  const after = (await pool.query(`select ${ALL} from ${s}.event_records order by source, dedupe_key`)).rows;
  assert.equal(after.length, 3000);
  assert.deepEqual(after, wideRows);
  const counts = await pool.query(
    `select (select count(*)::int from ${s}.events) as keys, (select count(*)::int from ${s}.event_bodies) as bodies`,
  );
  assert.deepEqual(counts.rows[0], { keys: 3000, bodies: 3000 });
});

test("migration 010 puts rows older than 62 days in one partition below the day partitions, none in the default", async () => {
  const names = await pool.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = $1::regclass`,
    [`${s}.event_bodies`],
  );
  const counts = await pool.query<{ name: string; n: number }>(
    `select tableoid::regclass::text as name, count(*)::int as n from ${s}.event_bodies group by 1`,
  );
  const parts = names.rows.map(({ name }) => ({
    name,
    n: counts.rows.find((c) => c.name.endsWith(name))?.n ?? 0,
  }));
  const byName = new Map(parts.map((p) => [p.name, p.n]));
  const archive = parts.find((p) => p.name.startsWith("event_bodies_before_"));
  assert.equal(archive?.n, 1000, "the 100-day-old rows");
  assert.equal(byName.get("event_bodies_default"), 0);
  const day = (ago: number) =>
    `event_bodies_${new Date(Date.now() - ago * DAY).toISOString().slice(0, 10).replaceAll("-", "")}`;
  assert.equal(
    (byName.get(day(0)) ?? 0) + (byName.get(day(1)) ?? 0),
    1000,
    "today's rows (a few may be yesterday's)",
  );
  assert.ok(byName.has(day(-7)), "a partition a week ahead");
});

test("getEvent reads a migrated event's payload and headers from its body row", async () => {
  const event = await getEvent(pool, ledger, "stripe", "evt_4");
  assert.deepEqual(event?.payload, { id: "evt_4", n: 4, deep: { a: [4, 4] } });
  assert.deepEqual(event?.headers, { "x-request-id": "req_4" });
  assert.equal(event?.bodyBytes, 307);
});

test("claimEvent after the migration writes the key to events and the body to today's partition", async () => {
  const body = Buffer.from('{"id":"evt_new","type":"t"}');
  const result = await claimEvent(pool, ledger, {
    source: "stripe",
    event: { dedupeKey: "evt_new", type: "t", payload: { id: "evt_new" }, dedupeOnBodyHash: false },
    body,
    headers: { "x-a": "1" },
    secretIndex: 0,
    arrivedVia: "delivery",
  });
  assert.equal(result.status, "accepted");
  const { rows } = await pool.query(
    `select b.tableoid::regclass::text as part, b.body from ${s}.event_bodies b where dedupe_key = 'evt_new'`,
  );
  assert.equal(rows.length, 1);
  assert.match(rows[0].part, /event_bodies_\d{8}$/);
  assert.deepEqual(rows[0].body, body);
});

test("runPrune drops a partition whose days are past the horizon, keeping the bodies of events not settled", async () => {
  const before = await pool.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from ${s}.event_records where received_at < now() - interval '99 days'
     group by status order by status`,
  );
  const report = await runPrune(pool, ledger, {
    sources: [{ name: "stripe" }, { name: "github" }],
    // The old rows' partition ends 62 days ago (at midnight, UTC): a horizon of 61 days is past its end.
    olderThanMs: 61 * DAY,
    tombstonesOlderThanMs: 400 * DAY,
    force: true,
  });
  assert.equal(report.partitionsDropped.length, 1);
  assert.match(report.partitionsDropped[0] ?? "", /^event_bodies_before_/);
  const left = await pool.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from ${s}.event_records where received_at < now() - interval '99 days'
     group by status order by status`,
  );
  assert.deepEqual(
    left.rows,
    before.rows.filter((r) => r.status !== "settled"),
    "the old settled events are gone; the others read as before",
  );
  const defaults = await pool.query(`select count(*)::int as n from ${s}.event_bodies_default`);
  assert.equal(
    defaults.rows[0].n,
    left.rows.reduce((n, r) => n + r.n, 0),
    "their bodies moved to the default partition",
  );
});

test("runPrune leaves a partition that a reader holds for a later run, and drops it once the reader is gone", async () => {
  // A settled event 20 days old, in a day partition of its own.
  const old = new Date(Date.now() - 20 * DAY);
  await pool.query(`select ${s}.make_body_partitions($1::timestamptz, 1)`, [old]);
  await pool.query(
    `with e as (insert into ${s}.events (source, dedupe_key, event_type, body_sha256, status, outcome, received_at, settled_at)
       values ('stripe', 'evt_old', 't', '\\x00', 'settled', 'applied', $1::timestamptz, $1::timestamptz) returning *)
     insert into ${s}.event_bodies (source, dedupe_key, received_at, body, payload) select source, dedupe_key, received_at, '\\x7b7d', '{}' from e`,
    [old],
  );
  const reader = await pool.connect();
  try {
    await reader.query("begin");
    await reader.query(
      `select count(*) from ${s}.event_bodies where received_at < now() - interval '19 days'`,
    );
    const options = {
      sources: [{ name: "stripe" }],
      olderThanMs: 10 * DAY,
      tombstonesOlderThanMs: 400 * DAY,
      force: true,
    };
    const t0 = Date.now();
    const held = await runPrune(pool, ledger, options);
    assert.deepEqual(held.partitionsDropped, []);
    assert.ok(Date.now() - t0 < 10_000);
    await reader.query("commit");
    const freed = await runPrune(pool, ledger, options);
    assert.deepEqual(freed.partitionsDropped, [
      `event_bodies_${old.toISOString().slice(0, 10).replaceAll("-", "")}`,
    ]);
  } finally {
    reader.release();
  }
});

test("runPrune drops a day partition past the horizon and keeps the body of its pending event, received_at to the microsecond", async () => {
  // Postgres keeps microseconds; a JS Date keeps milliseconds. The partition's live bodies are looked up again by
  // their received_at, which must come back whole.
  const at = `${new Date(Date.now() - 30 * DAY).toISOString().slice(0, 10)} 12:00:00.123456+00`;
  await pool.query(`select ${s}.make_body_partitions($1::timestamptz, 1)`, [at]);
  await pool.query(
    `with e as (insert into ${s}.events (source, dedupe_key, event_type, body_sha256, status, received_at)
       values ('stripe', 'evt_micro', 't', '\\x00', 'pending', $1::timestamptz) returning *)
     insert into ${s}.event_bodies (source, dedupe_key, received_at, body, payload)
     select source, dedupe_key, received_at, '\\x7b226964223a317d', '{"id":1}' from e`,
    [at],
  );
  const report = await runPrune(pool, ledger, {
    sources: [{ name: "stripe" }],
    olderThanMs: 10 * DAY,
    tombstonesOlderThanMs: 400 * DAY,
    force: true,
  });
  assert.ok(
    report.partitionsDropped.includes(`event_bodies_${at.slice(0, 10).replaceAll("-", "")}`),
    JSON.stringify(report.partitionsDropped),
  );
  const event = await getEvent(pool, ledger, "stripe", "evt_micro");
  assert.deepEqual(event?.payload, { id: 1 }, "the pending event's body survived its partition");
});

test("migration 011: bodies and payloads of every partition, and of partitions made later, compress with lz4", async (t) => {
  const { rows: lz4 } = await pool.query(
    "select 'lz4' = any(enumvals) as ok from pg_settings where name = 'default_toast_compression'",
  );
  if (!lz4[0]?.ok) {
    t.skip("this server was built without lz4: migration 011 changes nothing");
    return;
  }
  await pool.query(`select ${s}.make_body_partitions(now() + interval '20 days', 1)`);
  const { rows: columns } = await pool.query<{ relname: string; attname: string; attcompression: string }>(
    `select c.relname, a.attname, a.attcompression from pg_inherits i
       join pg_class c on c.oid = i.inhrelid join pg_attribute a on a.attrelid = c.oid
     where i.inhparent = $1::regclass and a.attname in ('body', 'payload')`,
    [`${s}.event_bodies`],
  );
  assert.ok(columns.length >= 2 * 10, `partitions: ${columns.length / 2}`);
  assert.deepEqual(
    columns.filter((c) => c.attcompression !== "l"),
    [],
    "every partition's body and payload are lz4",
  );
  const body = Buffer.from(JSON.stringify({ id: "evt_lz4", pad: "ab".repeat(3000) }));
  await claimEvent(pool, ledger, {
    source: "stripe",
    event: { dedupeKey: "evt_lz4", type: "t", payload: JSON.parse(body.toString()), dedupeOnBodyHash: false },
    body,
    headers: {},
    secretIndex: 0,
    arrivedVia: "delivery",
  });
  const { rows } = await pool.query(
    `select pg_column_compression(body) as body, pg_column_compression(payload) as payload
     from ${s}.event_bodies where dedupe_key = 'evt_lz4'`,
  );
  assert.deepEqual(rows[0], { body: "lz4", payload: "lz4" });
});
