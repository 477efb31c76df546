-- Vacuum the ledger by its churn, not by its size. Every arm and settle leaves a dead version of an event's row, and
-- Postgres' default (autovacuum_vacuum_scale_factor 0.2) waits for a fifth of the table to be dead: on a ledger of
-- 5,000,000 settled events, 1,000,000 dead rows. `npm run bench:scale` measured exactly that (docs/benchmarks.md,
-- "Scale"): at 300 events/s, dead rows grew without a single vacuum for 30 minutes, to 1,081,530, and the pick,
-- which walks the backlog index past every dead entry, grew 5x slower. At 1 % of the table (plus 1,000) autovacuum
-- runs about every minute and a half at that rate; the analyze follows the backlog's churn too, so the planner
-- keeps choosing the backlog index.
alter table events set (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);
