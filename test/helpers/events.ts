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
