import { quoteIdent } from "../db/pool.js";
import type { LedgerContext, Queryable } from "./context.js";

/**
 * Makes the day partitions of `event_bodies` (migration 010) for today and the next `days - 1` days (UTC), skipping
 * those that exist; safe to call from any number of processes at once. A body whose day has no partition still
 * lands in the default partition, so this only keeps prune's drop of whole days possible.
 *
 * @returns how many partitions it made.
 * @example
 * await makeBodyPartitions(pool, ledger, 8);
 */
export async function makeBodyPartitions(db: Queryable, ledger: LedgerContext, days = 8): Promise<number> {
  const { rows } = await db.query<{ made: number }>(
    `select ${ledger.s}.make_body_partitions(now(), $1::int) as made`,
    [days],
  );
  return rows[0]?.made ?? 0;
}

/** One partition of `event_bodies` that holds a closed range of days. */
interface DayPartition {
  readonly name: string;
  /** Where its range ends (exclusive). */
  readonly end: Date;
}

// Day partitions are named by their day (event_bodies_20261201), the partition of rows older than the migration's
// window by the end of its range (event_bodies_before_20261001); the default partition has no end.
async function dayPartitions(db: Queryable, ledger: LedgerContext): Promise<DayPartition[]> {
  const { rows } = await db.query<{ relname: string }>(
    `select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = $1::regclass order by c.relname`,
    [`${ledger.s}.event_bodies`],
  );
  const parts: DayPartition[] = [];
  for (const { relname } of rows) {
    const match = /^event_bodies_(before_)?(\d{4})(\d{2})(\d{2})$/.exec(relname);
    if (!match) continue;
    const start = Date.UTC(Number(match[2]), Number(match[3]) - 1, Number(match[4]));
    parts.push({ name: relname, end: new Date(match[1] ? start : start + 86_400_000) });
  }
  return parts;
}

/**
 * Where the partition of an old ledger's bodies ends (`event_bodies_before_YYYYMMDD`, made by migration 010 for rows
 * older than its window), or `null` when there is none: prune deletes the bodies below it row by row until it can
 * drop the partition whole.
 *
 * @example
 * const end = await oldBodiesEnd(pool, ledger);
 */
export async function oldBodiesEnd(db: Queryable, ledger: LedgerContext): Promise<Date | null> {
  const ends = (await dayPartitions(db, ledger)).filter((p) => p.name.startsWith("event_bodies_before_"));
  return ends.length === 0 ? null : new Date(Math.max(...ends.map((p) => p.end.getTime())));
}

/**
 * What {@link dropBodyPartitions} did: the partitions dropped, and the bodies of live events they held (kept, copied
 * to the default partition). A partition left for a later run (too many live events, or busy) is in neither.
 */
export interface BodyPartitionDrop {
  readonly dropped: readonly string[];
  readonly kept: number;
}

/** The most live events' bodies a drop copies out of one partition; past it the partition waits for a later run. */
const KEEP_LIMIT = 10_000;

/**
 * Drops the partitions of `event_bodies` whose days all end before `before` (prune's horizon), one statement each
 * (`drop_body_partition`, migration 010). Only the bodies of events still in `events` are kept: found first without
 * any lock that claims wait on, then copied to the default partition while the partition is detached and dropped,
 * under a lock on `event_bodies` held for a few index probes and given up after 100 ms, so claims never queue
 * behind it for longer (the partition is then skipped, and tried again at the next run). A partition holding more
 * than 10,000 live events' bodies (a source left out of the prune, or a backlog) is skipped too.
 *
 * @example
 * const { dropped } = await dropBodyPartitions(pool, ledger, new Date(Date.now() - 90 * 86_400_000));
 */
export async function dropBodyPartitions(
  db: Queryable,
  ledger: LedgerContext,
  before: Date,
): Promise<BodyPartitionDrop> {
  const dropped: string[] = [];
  let kept = 0;
  for (const part of await dayPartitions(db, ledger)) {
    if (part.end > before) continue;
    try {
      // received_at as text: a JS Date keeps milliseconds, and a key with its microseconds cut matches no body.
      const live = await db.query<{ source: string; dedupe_key: string; received_at: string }>(
        `select b.source, b.dedupe_key, b.received_at::text as received_at from ${ledger.s}.${quoteIdent(part.name)} b
         join ${ledger.s}.events e
           on e.source = b.source and e.dedupe_key = b.dedupe_key and e.received_at = b.received_at
         limit ${KEEP_LIMIT + 1}`,
      );
      if (live.rows.length > KEEP_LIMIT) continue;
      const done = await db.query<{ kept: number }>(
        `select ${ledger.s}.drop_body_partition($1::text, $2::text[], $3::text[], $4::timestamptz[]) as kept`,
        [
          part.name,
          live.rows.map((r) => r.source),
          live.rows.map((r) => r.dedupe_key),
          live.rows.map((r) => r.received_at),
        ],
      );
      dropped.push(part.name);
      kept += done.rows[0]?.kept ?? 0;
    } catch (error) {
      const code = (error as { code?: string }).code;
      // 42P01: another prune dropped it first.
      if (code === "42P01") continue;
      // 55P03: the lock was not granted within drop_body_partition's 100 ms (a worker's batch is reading bodies):
      // the partition waits for the next run.
      if (code !== "55P03") throw error;
    }
  }
  return { dropped, kept };
}
