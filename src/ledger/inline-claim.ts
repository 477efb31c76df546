import { createHash } from "node:crypto";
import { type ClaimInput, countDuplicate, insertSql, insertValues, withClaimSession } from "./claim.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";

/**
 * What an inline claim decided (docs/architecture.md §7). `lease` is the row's `next_attempt_at` as exact epoch seconds: the
 * token that proves, at settle or fail, that no later delivery has taken the event over since.
 *
 * @example
 * const claim: InlineClaimResult = await claimInline(pool, ledger, input, 60_000);
 * if (claim.status === "duplicate") return answerJson(200, { status: "duplicate", id: claim.id });
 */
export type InlineClaimResult =
  | { readonly status: "claimed"; readonly id: string; readonly lease: string }
  | {
      readonly status: "taken_over";
      readonly id: string;
      readonly lease: string;
      /** Handler runs recorded before this one (failed ones; a process that died records none). */
      readonly attempts: number;
    }
  | {
      readonly status: "duplicate";
      readonly id: string;
      readonly bodyMismatch: boolean;
      /** An earlier delivery's run still holds its lease: it may yet fail, so this is not a settled duplicate. */
      readonly inFlight: boolean;
    };

/**
 * One verified delivery to claim for an app's own route.
 *
 * @example
 * const input: InlineClaimInput = { source: "stripe", event, body, headers: {}, secretIndex: 0 };
 */
export type InlineClaimInput = Omit<ClaimInput, "notify" | "arrivedVia">;

// The claim's own insert and dedupe (no conflict target: the key and GitHub's body hash both count), claimed as
// 'inline', outside the worker's pick predicate, and without the worker's wake-up NOTIFY.
const inlineClaimSql = statement(
  "inline-claim",
  (s) => `with inserted as (${insertSql(s, { inline: true })})
select dedupe_key, extract(epoch from next_attempt_at)::text as lease from inserted`,
);

// The conflicting row is found as the duplicate count finds it. Only an inline row whose lease has run out (its
// handler failed, or its process died) is taken; two deliveries racing for it serialise on the row lock and the
// second, re-checking the predicate against the new lease, takes nothing and is a duplicate.
const takeOverSql = statement(
  "inline-take-over",
  (s) => `update ${s}.events e
set next_attempt_at = now() + $5::int * interval '1 millisecond'
from (
  (select dedupe_key from ${s}.events where source = $1::text and dedupe_key = $2::text)
  union all
  (select dedupe_key from ${s}.events
    where $4::boolean and source = $1::text and body_sha256 = $3::bytea and dedupe_on_body)
  limit 1
) existing
where e.source = $1::text and e.dedupe_key = existing.dedupe_key
  and e.status = 'inline' and e.next_attempt_at <= now()
returning e.dedupe_key, e.attempts, extract(epoch from e.next_attempt_at)::text as lease`,
);

const inFlightSql = statement(
  "inline-in-flight",
  (s) => `select status = 'inline' and next_attempt_at > now() as in_flight
from ${s}.events where source = $1::text and dedupe_key = $2::text`,
);

/**
 * Claims an event for an app's own route: a new event becomes an `inline` row leased for `leaseMs`; an inline row
 * whose lease ran out is taken over (leased again) and proceeds as new; anything else is a duplicate, counted in
 * `duplicates` as `claimEvent` counts it. Same session guarantees as the claim, on hookledger's pools (autocommit)
 * and on an app's own `pg` pool (an explicit transaction).
 *
 * @example
 * const claim = await claimInline(pool, ledger, { source: "stripe", event, body, headers: {}, secretIndex: 0 }, 60_000);
 * if (claim.status !== "duplicate") await runExistingHandler(event.payload);
 */
export function claimInline(
  db: Queryable,
  ledger: LedgerContext,
  input: InlineClaimInput,
  leaseMs: number,
): Promise<InlineClaimResult> {
  return withClaimSession(db, (session) => claimInlineOn(session, ledger, input, leaseMs));
}

async function claimInlineOn(
  db: Queryable,
  ledger: LedgerContext,
  input: InlineClaimInput,
  leaseMs: number,
): Promise<InlineClaimResult> {
  const { event } = input;
  const sha256 = createHash("sha256").update(input.body).digest();
  const lease = Math.round(leaseMs);
  // As in claimEvent: only a prune at that very instant can remove the conflicting row; three passes bound it.
  for (let pass = 0; pass < 3; pass++) {
    const inserted = await db.query<{ dedupe_key: string; lease: string }>({
      ...inlineClaimSql(ledger),
      values: [...insertValues({ ...input, arrivedVia: "delivery" }, sha256), lease],
    });
    const claimed = inserted.rows[0];
    if (claimed) return { status: "claimed", id: claimed.dedupe_key, lease: claimed.lease };
    const taken = await db.query<{ dedupe_key: string; attempts: number; lease: string }>({
      ...takeOverSql(ledger),
      values: [input.source, event.dedupeKey, sha256, event.dedupeOnBodyHash, lease],
    });
    const row = taken.rows[0];
    if (row) return { status: "taken_over", id: row.dedupe_key, lease: row.lease, attempts: row.attempts };
    const duplicate = await countDuplicate(db, ledger, input, sha256);
    if (duplicate) {
      const state = await db.query<{ in_flight: boolean }>({
        ...inFlightSql(ledger),
        values: [input.source, duplicate.id],
      });
      return { ...duplicate, inFlight: state.rows[0]?.in_flight ?? false };
    }
  }
  throw new Error(`claim of ${input.source}/${event.dedupeKey} conflicted with a row that no longer exists`);
}
