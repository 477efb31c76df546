-- Alerts (src/alerts/): the state of each alert instance, one row per (source, rule), and the messages its
-- transitions queue for each destination. Every instance of the service evaluates the rules; a transition is one
-- conditional statement on the state row that also queues its messages, so of any number of evaluators one sends
-- each firing and each resolved message (the row lock decides), and a message outlives a failed send or a restart.
create table alerts (
  source       text             not null,
  rule         text             not null,
  firing       boolean          not null,
  -- The episode (1, 2, …) that fired last: its firing and resolved messages carry it.
  episode      bigint           not null default 1,
  value        double precision not null,
  threshold    double precision not null,
  -- When the row last changed between firing and clear.
  since        timestamptz      not null,
  -- The database time of the evaluation the row holds: an older evaluation that commits late changes nothing.
  evaluated_at timestamptz      not null,
  primary key (source, rule)
);

-- One row per message and destination (`slack`, `webhooks[0]`, …). `next_attempt_at` is also the lease of the
-- instance sending it; a message that will not be tried again has it at infinity.
create table alert_messages (
  source          text        not null,
  rule            text        not null,
  episode         bigint      not null,
  kind            text        not null,
  destination     text        not null,
  data            jsonb       not null,
  created_at      timestamptz not null default now(),
  attempts        integer     not null default 0,
  next_attempt_at timestamptz not null default now(),
  sent_at         timestamptz,
  last_error      text,
  primary key (source, rule, episode, kind, destination),
  constraint alert_messages_kind check (kind in ('firing', 'resolved'))
);

-- The sender's pick: only unsent messages, so the index is as small as the queue.
create index alert_messages_due on alert_messages (next_attempt_at) where sent_at is null;

-- The dead-letter rule counts dead events per source at every evaluation: this index holds only them (a status
-- change already rewrites the indexes that name status in their predicates, so no update that was HOT stops being).
create index events_dead on events (source) where status = 'dead';
