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
-- every path that records a failure is covered by one rule, and an update that records none costs only the WHEN
-- test. A failure is recorded when an update of last_error (not null) is one of:
-- - the end of a worker's attempt: its stamp (attempt_started_at, set by the pick) cleared without a settle (the
--   worker's fail; the pick's "exhausted" mark of a last attempt that ended unrecorded), or the record that replaces
--   a committed arm (a handler ended the batch's transaction, ledger/arm.ts);
-- - the pick's note that the previous attempt ended unrecorded (a stamp found and replaced): that attempt's number;
-- - the inline guard's failure (attempts counted as the app's route fails).
-- Not recorded: the pick's count (attempts up, last_error carried over), a settle, and the arm's own mark, which
-- the worker writes into every event it runs and the settle replaces (told by its first words: keep them in
-- ledger/arm.ts). test/db/dashboard.test.ts checks a settled event has none and a retried one one per attempt.
-- Pruned with the event's row.
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
  values (new.source, new.dedupe_key,
    case when old.attempt_started_at is not null and new.attempt_started_at is not null then old.attempts
      else new.attempts end,
    new.last_error)
  on conflict do nothing;
  return null;
end $$;

create trigger events_attempt_error
after update of last_error on events
for each row
when (new.last_error is not null
  and new.last_error not like 'a handler of its batch ended the transaction itself%'
  and ((new.attempt_started_at is null and new.status <> 'settled'
        and (old.attempt_started_at is not null
          or old.last_error like 'a handler of its batch ended the transaction itself%'))
    or (old.attempt_started_at is not null and new.attempt_started_at is not null
        and new.last_error is distinct from old.last_error)
    or (new.status = 'inline' and new.attempts > old.attempts)))
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
