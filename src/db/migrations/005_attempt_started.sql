-- Attempts are counted durably (docs/architecture.md §6): the worker counts an attempt in a statement of its own when
-- it picks the event, before the handler's transaction, and stamps it here; recording the attempt's outcome clears it.
-- A stamp still set at the next pick means that attempt ended without an outcome (its process exited or was killed,
-- or its connection was lost), which is how such an event still reaches `dead` after maxAttempts.
alter table events add column attempt_started_at timestamptz;
