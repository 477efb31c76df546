-- The version guard's tie-break (docs/architecture.md, "The version guard"): among events of one entity with equal
-- versions, the one received last wins, whatever order concurrent workers finish them in. The applied event's
-- receipt order (events.received_at, events.seq) is stored with the version and compared as a tuple after it.
-- Null (rows written before this migration, or seeded by backfill-versions) sorts before every event.
alter table entity_versions add column received_at timestamptz, add column seq bigint;
