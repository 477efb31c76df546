-- The ledger's shape (docs/architecture.md, "The ledger's shape"): what an event carries that never changes (the
-- raw body, the payload, the kept headers) moves out of `events` into `event_bodies`, partitioned by the day it was
-- received (UTC). `events` keeps the key, the state and the few fields the worker and the guard read: a narrow row
-- that every arm, settle and retry rewrites (4 KB+ before, about 200 bytes now), and the pick's dead entries point
-- into a table a twentieth of the size. Prune drops a day's partition instead of deleting its bodies row by row
-- (ledger/body-partitions.ts).
create table event_bodies (
  source      text        not null,
  dedupe_key  text        not null,
  received_at timestamptz not null,
  body        bytea       not null,
  payload     jsonb       not null,
  headers     jsonb       not null default '{}',
  primary key (source, dedupe_key, received_at)
) partition by range (received_at);

-- Catches a body whose day has no partition (nothing made one ahead) and the bodies of live events kept when their
-- day is dropped: a claim never fails for want of a partition.
create table event_bodies_default partition of event_bodies default;

-- Makes the day partitions from `p_from`'s UTC day for `p_days` days, skipping days that exist, overlap another
-- partition, or already have rows in the default partition. Returns how many it made. Concurrent callers are safe:
-- a partition another session made first is skipped.
create function make_body_partitions(p_from timestamptz, p_days int)
returns int
language plpgsql volatile
set search_path from current
as $$
declare
  first_day date := (p_from at time zone 'utc')::date;
  day date;
  made int := 0;
begin
  for i in 0 .. p_days - 1 loop
    day := first_day + i;
    if to_regclass('event_bodies_' || to_char(day, 'YYYYMMDD')) is null then
      begin
        execute format('create table %I partition of event_bodies for values from (%L) to (%L)',
          'event_bodies_' || to_char(day, 'YYYYMMDD'),
          day::timestamp at time zone 'utc', (day + 1)::timestamp at time zone 'utc');
        made := made + 1;
      exception when duplicate_table or unique_violation or invalid_object_definition or check_violation then
        null;
      end;
    end if;
  end loop;
  return made;
end $$;

-- Drops one partition of event_bodies (prune, ledger/body-partitions.ts) and keeps the bodies of live events it held:
-- the caller found them first, without a lock; here, with the partition detached, they land in the default
-- partition. Detaching locks event_bodies against every claim's insert, so the lock is given up after 100 ms
-- (55P03, tried again at the next prune) and nothing slow runs while it is held: the bodies are copied by key, and a
-- key pruned since the caller read it is left out.
create function drop_body_partition(p_name text, p_sources text[], p_keys text[], p_received timestamptz[])
returns int
language plpgsql volatile
set search_path from current
set lock_timeout = '100ms'
as $$
declare
  kept int;
begin
  execute format('alter table event_bodies detach partition %I', p_name);
  execute format('insert into event_bodies (source, dedupe_key, received_at, body, payload, headers)
    select b.source, b.dedupe_key, b.received_at, b.body, b.payload, b.headers
    from unnest($1, $2, $3) as k (source, dedupe_key, received_at)
    join %I b on b.source = k.source and b.dedupe_key = k.dedupe_key and b.received_at = k.received_at
    where exists (select 1 from events e
      where e.source = k.source and e.dedupe_key = k.dedupe_key and e.received_at = k.received_at)', p_name)
    using p_sources, p_keys, p_received;
  get diagnostics kept = row_count;
  execute format('drop table %I', p_name);
  return kept;
end $$;

-- The rows of an existing ledger: the last 62 days (whichever have rows) get their day partitions; older rows go to
-- one partition below them, pruned as the default partition is (row by row), or dropped whole once all of it is
-- past the horizon.
do $$
declare
  cutoff date := (now() at time zone 'utc')::date - 62;
  oldest timestamptz := (select min(received_at) from events);
  day date;
begin
  if oldest is not null and (oldest at time zone 'utc')::date < cutoff then
    execute format('create table %I partition of event_bodies for values from (minvalue) to (%L)',
      'event_bodies_before_' || to_char(cutoff, 'YYYYMMDD'), cutoff::timestamp at time zone 'utc');
  end if;
  for day in
    select distinct (received_at at time zone 'utc')::date from events
    where received_at >= cutoff::timestamp at time zone 'utc'
  loop
    perform make_body_partitions(day::timestamp at time zone 'utc', 1);
  end loop;
end $$;

select make_body_partitions(now(), 8);

insert into event_bodies (source, dedupe_key, received_at, body, payload, headers)
select source, dedupe_key, received_at, body, payload, headers from events;

-- Dropping a column only hides it: the wide versions of rows that are never updated again (settled ones) keep
-- their space until prune deletes them (or a VACUUM FULL rewrites the table).
alter table events drop column body, drop column payload, drop column headers;

-- Every live event with every column the ledger held before the split, for reading: people and their own SQL (the
-- library reads through its ledger modules, which join only what each needs).
create view event_records as
select e.*, b.body, b.payload, b.headers
from events e
join event_bodies b on b.source = e.source and b.dedupe_key = e.dedupe_key and b.received_at = e.received_at;
