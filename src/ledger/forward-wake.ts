// A message found waiting behind another of its entity is deferred by this much, so that the next takes look past
// it: without the deferral every take re-examined every waiting message, and 16,000 of them behind 4,000 heads in
// flight made one take cost 228 ms (EXPLAIN ANALYZE), so that a deep ordered backlog drained at 18 forwards/s in
// the chaos suite's long tier. A waiting message is woken (due now) when its entity's head ends (sent, stale,
// dead: forward-sent.ts and forward-take.ts) and when a forward of its entity is written (forward-write.ts); the
// deferral itself is only the bound for a wake that was missed (an event of its entity went dead unforwarded).
export const WAIT_DEFER_MS = 2000;

/**
 * The CTE `woken`: makes due now the messages of the entities in `entities` (a relation of `source, ordering_key`)
 * that were deferred waiting behind their head. Rows another transaction holds are skipped, never waited for (their
 * holder is a take, which looks at them again, or a wake): so a wake never deadlocks with another, and one skipped
 * waits at most {@link WAIT_DEFER_MS}.
 */
export const wakeWaiting = (s: string, entities: string): string => `woken as (
  update ${s}.outbox w set next_attempt_at = now()
  where (w.source, w.dedupe_key, w.message_key) in (
    select z.source, z.dedupe_key, z.message_key from ${s}.outbox z
    where (z.source, z.ordering_key) in (select source, ordering_key from ${entities} where ordering_key is not null)
      and z.status = 'pending' and z.attempts = 0 and z.next_attempt_at > now()
    for update skip locked
  )
)`;
