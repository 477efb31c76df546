-- The outbox (docs/outbox.md): messages a handler wrote with `ctx.outbox.send`, inserted in its event's transaction
-- (a rolled-back attempt leaves none), sent once that transaction committed by the delivery engine
-- (src/outbound/engine.ts): a lease that counts the attempt and commits, the call outside any transaction, then a
-- settle fenced by that attempt.
create table outbox (
  source          text        not null,
  dedupe_key      text        not null,
  -- The message's place among its event's sends: "#0", "#1", … in call order, or the key the handler gave. An event
  -- that runs again (a retry, a requeue) sends the same keys, and a message already written is not written twice.
  message_key     text        not null,
  sender          text        not null,
  -- Derived from (source, dedupe_key, message_key): what the sender passes downstream as its idempotency key.
  idempotency_key text        not null,
  payload         jsonb       not null,
  status          text        not null default 'pending',
  attempts        integer     not null default 0,
  -- The lease too: taking a message moves it past the call's timeout, so another process skips it meanwhile.
  next_attempt_at timestamptz not null default now(),
  created_at      timestamptz not null default now(),
  sent_at         timestamptz,
  last_error      text,
  -- The HTTP status of the last attempt, when the sender made an HTTP call.
  last_status     integer,
  primary key (source, dedupe_key, message_key),
  constraint outbox_status check (status in ('pending', 'sent', 'dead'))
);

-- The engine's pick: only pending messages, so the index is as small as the queue.
create index outbox_due on outbox (next_attempt_at) where status = 'pending';
-- `hookledger outbox show <key>` and the dead-letter alert.
create index outbox_idempotency_key on outbox (idempotency_key);
create index outbox_dead on outbox (source) where status = 'dead';
