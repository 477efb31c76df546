-- An attempt's lease moves off the queue's order (docs/architecture.md, "A crashed attempt keeps its place"). The
-- count used to lease an event by setting next_attempt_at to the end of its lease, so an event whose worker died
-- was due again behind every event received before that lease ended: with a 45,000-event backlog, re-picked after
-- a median of 226 s. Now the count leaves next_attempt_at (the event's place in events_due) as it is and stamps the
-- lease here: a not-before that only an attempt in flight (attempt_started_at set) has. A column of no index: the
-- count's update changes no indexed column, so it can be HOT when the page has room.
alter table events add column lease_until timestamptz;
