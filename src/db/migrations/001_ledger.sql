-- The ledger: one row per (source, dedupe_key), forever until pruned (docs/architecture.md §3).
-- Every key starts with its distribution column (source, or entity_type) so the schema stays Citus-compatible (§9).
create table events (
  source          text        not null,
  dedupe_key      text        not null,
  seq             bigint      generated always as identity,
  event_type      text        not null,
  body            bytea       not null,
  body_sha256     bytea       not null,
  dedupe_on_body  boolean     not null default false,
  payload         jsonb       not null,
  headers         jsonb       not null default '{}',
  secret_index    smallint,
  entity_type     text,
  entity_id       text,
  entity_version  numeric,
  occurred_at     timestamptz,
  status          text        not null default 'pending',
  outcome         text,
  attempts        integer     not null default 0,
  last_error      text,
  next_attempt_at timestamptz not null default now(),
  received_at     timestamptz not null default now(),
  settled_at      timestamptz,
  arrived_via     text        not null default 'delivery',
  primary key (source, dedupe_key),
  constraint events_status check (status in ('pending', 'failed', 'settled', 'dead')),
  constraint events_outcome check (outcome in ('applied', 'stale', 'unhandled', 'ignored')),
  constraint events_settled_has_outcome check ((status = 'settled') = (outcome is not null)),
  constraint events_arrived_via check (arrived_via in ('delivery', 'replay', 'requeue'))
);

-- Providers whose id header is unsigned (GitHub): a body re-sent under a new id is still a duplicate.
create unique index events_body_dedupe on events (source, body_sha256) where dedupe_on_body;

-- The backlog index: its predicate is exactly the worker's pick predicate (ledger/pick.ts), so it holds only due work.
create index events_due on events (next_attempt_at) where status in ('pending', 'failed');

-- Duplicate deliveries are counted apart from the event row: a worker holds the row lock for the whole handler
-- transaction, and a duplicate's answer must never wait for it.
create table duplicates (
  source        text        not null,
  dedupe_key    text        not null,
  count         bigint      not null,
  first_seen_at timestamptz not null default now(),
  last_seen_at  timestamptz not null default now(),
  primary key (source, dedupe_key)
);

-- The version guard: the last applied version of each entity (worker/context.ts, ctx.advance).
create table entity_versions (
  entity_type text        not null,
  entity_id   text        not null,
  version     numeric     not null,
  source      text        not null,
  dedupe_key  text        not null,
  applied_at  timestamptz not null default now(),
  primary key (entity_type, entity_id)
);
