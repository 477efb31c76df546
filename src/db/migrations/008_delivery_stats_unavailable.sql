-- Deliveries answered 503 (the ledger out of reach, a claim past its deadline, a service still starting): the provider
-- retries them, so they are not lost, but an outage shows in `hookledger stats` as their count.
alter table delivery_stats add column unavailable bigint not null default 0;
