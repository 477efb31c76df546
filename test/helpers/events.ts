import { claimEvent, type ClaimResult } from "hookledger";
import type { LedgerContext, Queryable } from "../../src/ledger/context.js";
import type { EntityRef, ParsedEvent } from "hookledger";

/** Claims a synthetic event straight into the ledger (the HTTP edge is tested elsewhere). */
export function claimTestEvent(
  db: Queryable,
  ledger: LedgerContext,
  input: {
    source?: string;
    id: string;
    type?: string;
    payload?: unknown;
    entity?: EntityRef;
    dedupeOnBodyHash?: boolean;
    body?: string;
  },
): Promise<ClaimResult> {
  const payload = input.payload ?? { id: input.id };
  const body = input.body ?? JSON.stringify(payload);
  const event: ParsedEvent = {
    dedupeKey: input.id,
    type: input.type ?? "test.event",
    payload,
    dedupeOnBodyHash: input.dedupeOnBodyHash ?? false,
    ...(input.entity && { entity: input.entity }),
  };
  return claimEvent(db, ledger, {
    source: input.source ?? "test",
    event,
    body: Buffer.from(body),
    headers: {},
    secretIndex: 0,
    arrivedVia: "delivery",
  });
}

/** Claims `count` synthetic events of `source`, ids `${prefix}_00`, `${prefix}_01`, …, one by one; returns the ids. */
export async function claimNumbered(
  db: Queryable,
  ledger: LedgerContext,
  source: string,
  prefix: string,
  count: number,
): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}_${String(i).padStart(2, "0")}`);
  for (const id of ids) await claimTestEvent(db, ledger, { source, id });
  return ids;
}

/** An event's state as the worker tests check it. */
export interface EventState {
  dedupe_key: string;
  status: string;
  outcome: string | null;
  attempts: number;
  last_error: string | null;
  settled_at: Date | null;
}

/** The state of every event whose id starts with `${prefix}_`, by id. */
export async function eventStates(
  db: Queryable,
  ledger: LedgerContext,
  prefix: string,
): Promise<EventState[]> {
  const { rows } = await db.query<EventState>(
    `select dedupe_key, status, outcome, attempts, last_error, settled_at from ${ledger.s}.events
     where dedupe_key like $1 order by dedupe_key`,
    [`${prefix}\\_%`],
  );
  return rows;
}
