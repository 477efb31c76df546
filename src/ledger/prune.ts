import { type LedgerContext, type Queryable, statement } from "./context.js";
import { FORWARD_KEY } from "./forward-write.js";

/**
 * One batch of one source's prunable rows: settled before `before`, at most `limit` of them.
 *
 * @example
 * const batch: PruneBatch = { source: "stripe", before: new Date(Date.now() - 90 * 86_400_000), limit: 1000 };
 */
export interface PruneBatch {
  readonly source: string;
  /** Rows settled before this instant go. */
  readonly before: Date;
  readonly limit: number;
  /**
   * Where the partition of an old ledger's bodies ends (migration 010, `event_bodies_before_…`), when there is one:
   * the bodies of rows received before it are deleted with their rows (body-partitions.ts, `oldBodiesEnd`).
   */
  readonly oldBodiesEnd?: Date | null;
}

// Phase 1 marks: the batch's oldest settled rows (rows locked by anyone else are skipped, never waited for) get a
// tombstone, committed before any row goes. A claim of the key whose snapshot predates this commit meets the live
// row (a conflict, so a duplicate) or, when its index probe comes after the delete, finds the tombstone in the
// re-check it makes on the row it inserted (tombstone.ts, recheckTombstoneSql), which is why the tombstone must be
// committed first.
const markSql = statement(
  "prune-mark",
  (s) => `with doomed as (
  select source, dedupe_key, body_sha256, dedupe_on_body, received_at from ${s}.events
  where source = $1::text and status = 'settled' and settled_at < $2::timestamptz
  order by settled_at
  limit $3::int
  for update skip locked
), marked as (
  insert into ${s}.tombstones (source, dedupe_key, body_sha256, dedupe_on_body, received_at)
  select source, dedupe_key, body_sha256, dedupe_on_body, received_at from doomed
  on conflict (source, dedupe_key) do nothing
)
select dedupe_key from doomed`,
);

// Phase 2 deletes the marked rows that are still settled and old (a requeue in between keeps its row), their
// duplicate counts and the bodies that would outlive their day: those in the default partition (kept when their day
// was dropped, or claimed when it had no partition) and those in an old ledger's partition (rows received before
// `$4`), and their outbox messages already sent with a sent forward's attempts (docs/outbox.md, "Prune": pending
// and dead ones stay, to be sent or retried). Bodies in a day partition go with the partition, all at once (body-partitions.ts), once their whole day is
// past the horizon: they are never probed here, one by one.
const sweepSql = statement(
  "prune-sweep",
  (s) => `with gone as (
  delete from ${s}.events e
  where e.source = $1::text and e.dedupe_key = any($2::text[])
    and e.status = 'settled' and e.settled_at < $3::timestamptz
  returning e.dedupe_key, e.received_at
), counts as (
  delete from ${s}.duplicates d using gone where d.source = $1::text and d.dedupe_key = gone.dedupe_key
), errors as (
  delete from ${s}.attempt_errors a using gone where a.source = $1::text and a.dedupe_key = gone.dedupe_key
), kept_bodies as (
  delete from ${s}.event_bodies_default b using gone
  where b.source = $1::text and b.dedupe_key = gone.dedupe_key and b.received_at = gone.received_at
), sent_messages as (
  delete from ${s}.outbox o using gone
  where o.source = $1::text and o.dedupe_key = gone.dedupe_key and o.status = 'sent'
), sent_forward_attempts as (
  delete from ${s}.forward_attempts f using gone
  where f.source = $1::text and f.dedupe_key = gone.dedupe_key and exists (
    select 1 from ${s}.outbox o where o.source = $1::text and o.dedupe_key = gone.dedupe_key
      and o.message_key = '${FORWARD_KEY}' and o.status = 'sent'
  )
), old_bodies as (
  delete from ${s}.event_bodies b using gone
  where gone.received_at < $4::timestamptz
    and b.source = $1::text and b.dedupe_key = gone.dedupe_key and b.received_at = gone.received_at
)
select count(*)::int as n from gone`,
);

/**
 * Prunes one batch of one source (docs/architecture.md §8): tombstones the batch's dedupe keys, then deletes its rows,
 * their `duplicates` counts, their attempts' errors and their sent outbox messages. Only `settled` rows ever go; pending, failed, dead and inline rows stay. Each phase is
 * one short autocommit statement, so locks stay bounded by the batch. Returns how many rows were tombstoned
 * (`marked`, 0 when none are left) and how many went (`pruned`: fewer if some were requeued in between).
 *
 * @example
 * while ((await pruneBatch(pool, ledger, { source: "stripe", before, limit: 1000 })).marked > 0) {}
 */
export async function pruneBatch(
  db: Queryable,
  ledger: LedgerContext,
  batch: PruneBatch,
): Promise<{ marked: number; pruned: number }> {
  const marked = await db.query<{ dedupe_key: string }>({
    ...markSql(ledger),
    values: [batch.source, batch.before, batch.limit],
  });
  if (marked.rows.length === 0) return { marked: 0, pruned: 0 };
  const swept = await db.query<{ n: number }>({
    ...sweepSql(ledger),
    values: [batch.source, marked.rows.map((r) => r.dedupe_key), batch.before, batch.oldBodiesEnd ?? null],
  });
  return { marked: marked.rows.length, pruned: swept.rows[0]?.n ?? 0 };
}

/**
 * How many of a source's rows a prune would delete (`--dry-run`).
 *
 * @example
 * const n = await countPrunable(pool, ledger, "stripe", before);
 */
export async function countPrunable(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  before: Date,
): Promise<number> {
  const r = await db.query<{ n: number }>(
    `select count(*)::int as n from ${ledger.s}.events
     where source = $1::text and status = 'settled' and settled_at < $2::timestamptz`,
    [source, before],
  );
  return r.rows[0]?.n ?? 0;
}

/**
 * Deletes at most `limit` tombstones of events received before `before` (of `sources` only, when given): past this
 * second horizon a replay of the key would be accepted as new. Returns how many went; with `dryRun`, how many would.
 *
 * @example
 * while ((await expireTombstones(pool, ledger, { before, limit: 1000 })) > 0) {}
 */
export async function expireTombstones(
  db: Queryable,
  ledger: LedgerContext,
  options: { before: Date; limit: number; sources?: readonly string[]; dryRun?: boolean },
): Promise<number> {
  const filter = `received_at < $1::timestamptz and ($2::text[] is null or source = any($2::text[]))`;
  const values = [options.before, options.sources ?? null];
  if (options.dryRun) {
    const r = await db.query<{ n: number }>(
      `select count(*)::int as n from ${ledger.s}.tombstones where ${filter}`,
      values,
    );
    return r.rows[0]?.n ?? 0;
  }
  const r = await db.query<{ n: number }>(
    `with doomed as (
  select source, dedupe_key from ${ledger.s}.tombstones where ${filter}
  order by received_at limit $3::int for update skip locked
), gone as (
  delete from ${ledger.s}.tombstones t using doomed
  where t.source = doomed.source and t.dedupe_key = doomed.dedupe_key returning 1
)
select count(*)::int as n from gone`,
    [...values, options.limit],
  );
  return r.rows[0]?.n ?? 0;
}

/**
 * The sources that have settled rows in the ledger, read by a skip scan of the settled-rows index (one probe per
 * source, however large the table).
 *
 * @example
 * const names = await settledSources(pool, ledger); // ["github", "stripe"]
 */
export async function settledSources(db: Queryable, ledger: LedgerContext): Promise<string[]> {
  const r = await db.query<{ source: string }>(
    `with recursive walk(source) as (
  (select source from ${ledger.s}.events where status = 'settled' order by source limit 1)
  union all
  select (select e.source from ${ledger.s}.events e
          where e.status = 'settled' and e.source > walk.source order by e.source limit 1)
  from walk where walk.source is not null
)
select source from walk where source is not null`,
  );
  return r.rows.map((row) => row.source);
}
