-- The dashboard (docs/dashboard.md): what its views read, and the record of what its users did.
--
-- The events list pages newest first by (received_at, seq), a keyset cursor that a time filter narrows too. One
-- index entry per claim, appended at the index's right edge (received_at is the claim's transaction time); its cost
-- on the claim is measured in docs/benchmarks.md, "The dashboard on a million events".
create index events_received on events (received_at, seq);

-- Dead and failed events, the list an operator opens first: a partial index the size of that list, which no claim
-- and no settle of a healthy event touches.
create index events_troubled on events (received_at, seq) where status in ('failed', 'dead');

-- The list's type filter. Without it a type that few or no events have was found by reading the whole table:
-- 230 ms for a million events (docs/benchmarks.md, "The dashboard on a million events"). Some fifty types make
-- some fifty right edges, so a claim's entry lands at one of them as in events_received.
create index events_type on events (event_type, received_at, seq);

-- An entity's history (which of its events applied, which were stale) and the list's entity filter.
create index events_entity on events (entity_type, entity_id, received_at) where entity_id is not null;

-- Every failed attempt's error, kept as history (events.last_error holds only the latest). Written by a trigger, so
-- every path that records a failure (the worker's fail, the pick's note of an attempt that ended unrecorded, the
-- inline guard's failure, a batch's end) is covered by one rule; an update that leaves last_error as it was, or
-- clears it, costs only the trigger's WHEN test. The worker's arm (ledger/arm.ts) writes its BATCH_ENDED text into
-- every event it runs, inside the event's savepoint, and the settle replaces it: that mark is not a failure, and the
-- WHEN test leaves it out by its first words (a test of the dashboard checks that a settled event has no failed
-- attempt). Pruned with the event's row.
create table attempt_errors (
  source     text        not null,
  dedupe_key text        not null,
  attempt    integer     not null,
  failed_at  timestamptz not null default now(),
  error      text        not null,
  primary key (source, dedupe_key, attempt, failed_at)
);

create function record_attempt_error()
returns trigger
language plpgsql
set search_path from current
as $$
begin
  insert into attempt_errors (source, dedupe_key, attempt, error)
  values (new.source, new.dedupe_key, new.attempts, new.last_error)
  on conflict do nothing;
  return null;
end $$;

create trigger events_attempt_error
after update of last_error on events
for each row
when (new.last_error is not null and (new.last_error, new.attempts) is distinct from (old.last_error, old.attempts)
  and new.last_error not like 'a handler of its batch ended the transaction itself%')
execute function record_attempt_error();

-- The health charts read the last hour or day of the per-minute counts of every source; the primary key leads with
-- the source. A month of four sources is 170,000 rows, 68 ms to scan for an hour's 240. One row per source and
-- minute, written by the stats observer's flush, not by the claim.
create index delivery_stats_minute on delivery_stats (minute);

-- What the dashboard's users did (retry, requeue): who, when, what, and what came of it. Append-only.
create table dashboard_actions (
  id      bigint      generated always as identity primary key,
  at      timestamptz not null default now(),
  actor   text        not null,
  action  text        not null,
  events  jsonb       not null,
  result  jsonb       not null
);
