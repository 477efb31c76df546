-- The attempt history of migration 012 is now written by the statements that end an attempt with an error, each in
-- the same statement as its record in events: the worker's failure (ledger/fail.ts), the pick's note of an attempt
-- that ended unrecorded (ledger/pick.ts) and the inline guard's failure (ledger/inline-finish.ts). The trigger cost
-- every statement that set last_error its setup, and the worker's arm sets it once per event: 7 % of the worker's
-- database time (docs/benchmarks.md, "What the indexes cost the worker"). It also recorded the previous failure
-- again when a batch gave back an event that had failed before.
drop trigger events_attempt_error on events;
drop function record_attempt_error();
