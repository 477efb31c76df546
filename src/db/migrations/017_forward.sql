-- Forward mode (docs/forwarding.md): a source with `forward` sends each verified, deduplicated event to a
-- destination, as an outbox message of the sender `forward` written in the event's transaction, through the same
-- delivery engine as every other message.

-- The provider's bytes of a forwarded event, copied from event_bodies when the message is written: prune may drop
-- the event's body partition while a disabled destination keeps its message waiting.
alter table outbox add column body bytea;
-- Per-entity order (`ordering: "entity"`): the event's entity and version; among equal versions, the write order.
alter table outbox add column ordering_key text;
alter table outbox add column ordering_version numeric;
-- The event's receipt: an ordered forward also waits for the events of its entity received before it that the
-- worker has not processed yet (it may run one entity's events in any order).
alter table outbox add column event_received_at timestamptz;
alter table outbox add column seq bigint generated always as identity;
-- `stale`: an ordered forward not sent because a newer version of its entity was delivered first.
alter table outbox drop constraint outbox_status;
alter table outbox add constraint outbox_status check (status in ('pending', 'sent', 'dead', 'stale'));

-- The take's "does another message of this entity go first?" probe: only pending ordered messages.
create index outbox_ordering on outbox (source, ordering_key)
  where status = 'pending' and ordering_key is not null;
-- The take's "was a newer version of this entity delivered?" probe.
create index outbox_ordering_sent on outbox (source, ordering_key, ordering_version)
  where status = 'sent' and ordering_key is not null;

-- One row per forwarding source that has had a failure: disabled by a 410 until re-enabled, and the circuit
-- breaker (consecutive failed attempts; past a threshold the destination pauses until `paused_until`). While
-- disabled or paused its messages are not taken, so they spend no attempts.
create table forward_destinations (
  source          text        primary key,
  disabled_at     timestamptz,
  disabled_reason text,
  failures        integer     not null default 0,
  paused_until    timestamptz
);

-- Each attempt of a forwarded message, for the dashboard and `hookledger forward show`: the status the destination
-- answered (null for a network failure), the time it took and the first bytes of its answer. Never a secret: the
-- request's headers are not kept.
create table forward_attempts (
  id          bigint      generated always as identity primary key,
  source      text        not null,
  dedupe_key  text        not null,
  attempt     integer     not null,
  at          timestamptz not null default now(),
  status      integer,
  ms          integer     not null,
  error       text,
  snippet     text
);
create index forward_attempts_event on forward_attempts (source, dedupe_key, id);
