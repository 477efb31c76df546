-- Inline guard (docs/architecture.md §7): a row claimed by an app's own route is 'inline' while that route runs it, outside
-- the worker's pick predicate. next_attempt_at is then the lease: past it (the route failed or its process died)
-- the provider's next delivery takes the event over instead of being answered as a duplicate.
alter table events drop constraint events_status;
alter table events add constraint events_status
  check (status in ('pending', 'failed', 'settled', 'dead', 'inline'));

-- Duplicates whose body differs from the first delivery's: harmless re-serialisation, or a different payload under
-- one id (an alarm).
alter table duplicates add column body_mismatches bigint not null default 0;

-- Delivery counts per source and minute, kept across restarts for `hookledger stats`.
create table delivery_stats (
  source     text        not null,
  minute     timestamptz not null,
  accepted   bigint      not null default 0,
  duplicates bigint      not null default 0,
  would_skip bigint      not null default 0,
  mismatches bigint      not null default 0,
  refused    bigint      not null default 0,
  primary key (source, minute)
);
