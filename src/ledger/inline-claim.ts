import { createHash } from "node:crypto";
import { type ClaimInput, claimCtes, insertValues, withClaimSession } from "./claim.js";
import { type LedgerContext, type Queryable, statement } from "./context.js";
import { tombstoneDuplicate } from "./tombstone.js";

interface Decision {
  readonly dedupe_key: string;
  readonly taken: boolean;
  readonly attempts: number | null;
  readonly lease: string | null;
  readonly mismatch: boolean;
  readonly in_flight: boolean;
}

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
      /**
       * The row is still `inline`: an earlier delivery's run holds its lease (or took it over just now) and may yet
       * fail, so this is not a settled duplicate.
       */
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
  (s) => `with ${claimCtes(s, { inline: true })}
select dedupe_key, extract(epoch from next_attempt_at)::text as lease from inserted`,
);

// After the insert conflicted, one statement decides (docs/architecture.md §7): it finds the conflicting row as the
// duplicate count does, takes it over when it is an inline row whose lease has run out, and otherwise counts the
// delivery as a duplicate and reports whether the row is still inline. Deciding in one snapshot matters: a row read
// `inline` and not taken here belongs to a run that may yet fail (its lease live, or just renewed by a delivery
// racing this one, found by the update's re-check under the row lock), so the delivery is answered "in flight",
// never a 200 that would be final for the provider. Settled (or worker-owned) rows never become inline again, so
// any other status is a true duplicate.
const decideSql = statement(
  "inline-decide",
  (s) => `with existing as (
  (select dedupe_key, body_sha256 <> $3::bytea as mismatch, status = 'inline' as inline from ${s}.events
    where source = $1::text and dedupe_key = $2::text)
  union all
  (select dedupe_key, false, status = 'inline' from ${s}.events
    where $4::boolean and source = $1::text and body_sha256 = $3::bytea and dedupe_on_body)
  limit 1
), taken as (
  update ${s}.events e
  set next_attempt_at = now() + $5::int * interval '1 millisecond'
  from existing
  where e.source = $1::text and e.dedupe_key = existing.dedupe_key
    and e.status = 'inline' and e.next_attempt_at <= now()
  returning e.dedupe_key, e.attempts, extract(epoch from e.next_attempt_at)::text as lease
), counted as (
  insert into ${s}.duplicates as d (source, dedupe_key, count, body_mismatches)
  select $1::text, dedupe_key, 1, mismatch::int from existing where not exists (select from taken)
  on conflict (source, dedupe_key) do update
    set count = d.count + 1, body_mismatches = d.body_mismatches + excluded.body_mismatches, last_seen_at = now()
  returning dedupe_key
)
select dedupe_key, true as taken, attempts, lease, false as mismatch, false as in_flight from taken
union all
select dedupe_key, false, null, null, existing.mismatch, existing.inline from counted join existing using (dedupe_key)`,
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
    const decided = await db.query<Decision>({
      ...decideSql(ledger),
      values: [input.source, event.dedupeKey, sha256, event.dedupeOnBodyHash, lease],
    });
    const row = decided.rows[0];
    if (row?.taken) {
      return {
        status: "taken_over",
        id: row.dedupe_key,
        lease: row.lease ?? "",
        attempts: row.attempts ?? 0,
      };
    }
    if (row) {
      return { status: "duplicate", id: row.dedupe_key, bodyMismatch: row.mismatch, inFlight: row.in_flight };
    }
    // No live row: the event was pruned, so it was settled; its tombstone answers.
    const pruned = await tombstoneDuplicate(db, ledger, input, sha256);
    if (pruned) return { ...pruned, inFlight: false };
  }
  throw new Error(`claim of ${input.source}/${event.dedupeKey} conflicted with a row that no longer exists`);
}
