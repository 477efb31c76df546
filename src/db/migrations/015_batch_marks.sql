-- The worker's arm moves off the events row (docs/architecture.md, "A handler that ends the transaction"). Each
-- event of a batch used to be marked dead in its savepoint before its handler ran, so that a handler committing the
-- batch's transaction itself made its writes' event dead with them: a third non-HOT update of the event's row,
-- through every index of events, about 120 µs of the worker's ~330 µs of database time per event (measured on
-- PG15, docs/benchmarks.md). Now the count stamps each event with its batch (the count's transaction id) and its
-- slot in it, the batch's transaction inserts one row here, and each event's arm sets its slot's bit in that row:
-- an update of a narrow row this transaction inserted, with no index to change. The settle deletes the row, so it
-- is only ever committed by a handler's own commit; whoever meets an event still stamped with a committed bit
-- (the count, the batch's own give-back) makes it dead instead of running it again.
alter table events add column attempt_batch bigint, add column attempt_slot smallint;

create table batch_marks (
  batch bigint not null,
  -- The batch's own transaction (pg_current_xact_id()): an arm or settle run in another transaction (a handler's
  -- `commit; begin`) finds no row to write.
  xid bigint not null,
  -- Bit n - 1 is set once the event in slot n (1 to 64, pick.ts MAX_BATCH) was armed.
  armed bigint not null default 0,
  primary key (batch, xid)
);

-- Every batch inserts a row, arms it once per event and deletes it: dead versions at the worker's event rate, on a
-- table that stays a few pages. Vacuum it by count, not by size.
alter table batch_marks set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000);
