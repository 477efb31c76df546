// The app table both worker contenders write: one row per subscription, written only by a newer version (the
// version-guarded upsert every job or event does).
import { CREATED_BASE } from "../lib/stripe.js";

/**
 * The DDL of `schema.app_subscriptions`.
 *
 * @example
 * await pool.query(appTableDdl(schema));
 */
export function appTableDdl(schema: string): string {
  return `create table ${schema}.app_subscriptions (
    entity_id  text        primary key,
    version    bigint      not null,
    status     text        not null,
    updated_at timestamptz not null default now()
  )`;
}

/**
 * The version-guarded upsert: parameters entity id, version, status.
 *
 * @example
 * await tx.query(guardedUpsert(schema), [sub.id, event.created, sub.status]);
 */
export function guardedUpsert(schema: string): string {
  return `insert into ${schema}.app_subscriptions as a (entity_id, version, status)
    values ($1::text, $2::bigint, $3::text)
    on conflict (entity_id) do update set version = excluded.version, status = excluded.status, updated_at = now()
    where a.version < excluded.version`;
}

/**
 * What the app table must hold once every event is applied: one row per entity, each at its last version (the
 * count and the sum of versions; see `workerEvent`).
 *
 * @example
 * expectedAppState(20_000, 2_000); // { rows: 2000, versionSum: … }
 */
export function expectedAppState(events: number, entities: number): { rows: number; versionSum: bigint } {
  let versionSum = 0n;
  const rows = Math.min(events, entities);
  for (let k = 0; k < rows; k++) {
    const last = k + Math.floor((events - 1 - k) / entities) * entities;
    versionSum += BigInt(CREATED_BASE + Math.floor(last / entities));
  }
  return { rows, versionSum };
}
