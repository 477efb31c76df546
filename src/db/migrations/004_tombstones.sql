-- Prune (docs/architecture.md §8): what is left of a pruned event, so a late replay or redelivery of its dedupe key is still
-- answered as a duplicate. The body hash serves providers whose id header is unsigned (GitHub, Shopify: §3) and
-- tells a re-serialised body apart. Tombstones expire by the event's receipt time, past a second, longer horizon.
create table tombstones (
  source         text        not null,
  dedupe_key     text        not null,
  body_sha256    bytea       not null,
  dedupe_on_body boolean     not null default false,
  received_at    timestamptz not null,
  pruned_at      timestamptz not null default now(),
  primary key (source, dedupe_key)
);

-- The claim's body-hash check, as events_body_dedupe does for live rows.
create index tombstones_body_dedupe on tombstones (source, body_sha256) where dedupe_on_body;

-- Tombstone expiry walks this index (oldest first, in batches).
create index tombstones_received on tombstones (received_at);

-- Prune walks each source's settled rows oldest first; the index holds settled rows only.
create index events_settled on events (source, settled_at) where status = 'settled';
