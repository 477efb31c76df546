-- Bodies and payloads are compressed with lz4 where the server was built with it (PostgreSQL 14+, `--with-lz4`).
-- A 2 KB body and its payload make a row past the TOAST threshold, so every claim compressed both, and pglz was
-- 15 % of the batched claim's backend CPU (perf); with lz4, 65-68 against 75-79 µs of backend CPU per row (64-row
-- batches of 2 KB Stripe events), and the worker reads payloads back with lz4's faster decompression. Only new rows
-- are written this way: nothing is rewritten, and rows already stored keep pglz (both decompress transparently).
-- Partitions made later copy the parent's setting; those that exist are set one by one (the parent's does not
-- recurse). Without lz4 this changes nothing.
do $$
declare
  part regclass;
begin
  if exists (select 1 from pg_settings where name = 'default_toast_compression' and 'lz4' = any(enumvals)) then
    alter table event_bodies alter column body set compression lz4, alter column payload set compression lz4;
    for part in select inhrelid::regclass from pg_inherits where inhparent = 'event_bodies'::regclass loop
      execute format('alter table %s alter column body set compression lz4, alter column payload set compression lz4',
        part);
    end loop;
  end if;
end $$;
