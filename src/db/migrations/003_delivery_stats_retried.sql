-- Inline guard (docs/architecture.md §7): a delivery that takes over an event whose earlier inline handler failed or whose
-- process died. Counted apart from accepted (not a new event) and from duplicates (not double-processing).
alter table delivery_stats add column retried bigint not null default 0;
