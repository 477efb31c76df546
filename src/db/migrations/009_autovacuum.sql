-- Vacuum the ledger by its churn, not by its size. Every arm and settle leaves a dead version of an event's row, and
-- the pick walks the backlog index past every dead entry until a vacuum removes it. Postgres' default
-- (autovacuum_vacuum_scale_factor 0.2) waits for a fifth of the table to be dead: on a ledger of 5,000,000 settled
-- events, 1,000,000 dead rows, half an hour of churn at 300 events/s. At 1 % of the table (plus 1,000) a vacuum
-- comes every 1 % of churn whatever the ledger's size; the analyze follows the backlog's churn too, so the planner
-- keeps choosing the backlog index. Measured in docs/architecture.md, "Autovacuum follows the churn".
alter table events set (
  autovacuum_vacuum_scale_factor = 0.01,
  autovacuum_vacuum_threshold = 1000,
  autovacuum_analyze_scale_factor = 0.02
);
