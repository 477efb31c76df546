-- Prune (docs/architecture.md §8) against a racing claim. The claim checks for a tombstone in its statement's
-- snapshot, then probes the unique indexes. A claim whose snapshot predates a tombstone's commit, and whose probe
-- runs after the pruned row's delete, meets neither and would insert the key afresh. Prune commits the tombstone
-- before the delete, so a check made after the probe always sees it: the claim calls this on the row it inserted
-- (in RETURNING, once the index entries exist). A volatile function reads with a fresh snapshot at READ COMMITTED.
-- Finding a tombstone, it raises `HLP01`, which aborts the insert; the claim then runs again and answers duplicate.
create function claim_recheck(p_source text, p_key text, p_sha256 bytea, p_on_body boolean)
returns boolean
language plpgsql volatile
set search_path from current
as $$
begin
  if exists (select 1 from tombstones where source = p_source and dedupe_key = p_key)
    or (p_on_body and exists (select 1 from tombstones
      where source = p_source and body_sha256 = p_sha256 and dedupe_on_body)) then
    raise exception 'the event % of source % was pruned while this claim ran', p_key, p_source
      using errcode = 'HLP01';
  end if;
  return true;
end $$;
