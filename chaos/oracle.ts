import type pg from "pg";
import { APP_SCHEMA, SOURCE } from "./app-config.js";
import type { DestinationReport, Forwarded } from "./destination.js";
import type { SentEvent } from "./provider.js";

/** A ledger row, with its rank in the guard's order among its entity's events (version, then receipt order). */
export interface LedgerRow {
  readonly id: string;
  readonly entity: string | null;
  readonly status: string;
  readonly outcome: string | null;
  readonly attempts: number;
  readonly rank: number;
}

/** One run of the handler that committed, in commit order per entity (`seq`). */
export interface Application {
  readonly seq: number;
  readonly eventId: string;
  readonly entity: string;
  readonly stale: boolean;
}

export interface EntityState {
  readonly id: string;
  readonly eventId: string;
}

/** One outbox message, as the ledger holds it at the end. */
export interface OutboxRow {
  readonly eventId: string;
  readonly status: string;
}

/** One event's forward, as the ledger holds it at the end: `sent`, `stale` (skipped), pending or dead. */
export interface ForwardRow {
  readonly eventId: string;
  readonly status: string;
}

/**
 * Everything the oracle judges: what was sent, what the database holds once the run is over, and what the outbound
 * destination applied (per event id, the idempotency keys it applied the event's message under; the forwards in
 * the order it applied them, and per event the `webhook-id`s it applied them under).
 */
export interface Observed {
  readonly sent: readonly SentEvent[];
  readonly ledger: readonly LedgerRow[];
  readonly applications: readonly Application[];
  readonly entities: readonly EntityState[];
  readonly outbox: readonly OutboxRow[];
  readonly destination: ReadonlyMap<string, ReadonlySet<string>>;
  readonly forwards: readonly ForwardRow[];
  readonly forwarded: readonly Forwarded[];
  readonly forwardKeys: ReadonlyMap<string, ReadonlySet<string>>;
  /** After a failover: events acknowledged whose claim the promoted standby did not hold. */
  readonly ackedMissing?: readonly string[];
}

/** The oracle's findings: each list names the events (or entities) that broke one rule. */
export interface Verdict {
  readonly sent: number;
  readonly ledgerRows: number;
  readonly applied: number;
  readonly staleSkips: number;
  /** Sent, but no ledger row, or settled without ever being applied. */
  readonly lost: string[];
  /** Acknowledged, then missing after a failover (a copy claimed again later hides it from `lost`). */
  readonly ackedMissing: string[];
  /** Applied (or skipped as stale) more than once. */
  readonly duplicated: string[];
  /** In the ledger or applied, but never sent. */
  readonly unexpected: string[];
  /** Not settled (pending, failed, inline) by the deadline. */
  readonly stuck: string[];
  readonly dead: string[];
  /** Entities whose final state is not their highest version (ties: the one received last). */
  readonly wrongState: string[];
  /** Applications of an older version committed after a newer one of the same entity. */
  readonly outOfOrder: string[];
  /** Side effects: events the destination applied under more than one key. */
  readonly sentTwice: string[];
  /** Committed (fresh) applications whose message the destination never applied. */
  readonly neverSent: string[];
  /** Messages the destination applied for events with no committed fresh application (a rolled-back send). */
  readonly sentUncommitted: string[];
  /** Outbox messages not `sent` by the deadline (pending or dead). */
  readonly outboxUnsent: string[];
  /** Forwards the destination applied (each `webhook-id` once). */
  readonly forwardedCount: number;
  /** Forwards recorded `stale`: not sent, a newer version of their entity went first. */
  readonly forwardStale: number;
  /** Events the destination applied under more than one `webhook-id`. */
  readonly forwardTwice: string[];
  /** Settled events whose forward is missing, or recorded `sent` but never applied by the destination. */
  readonly forwardNever: string[];
  /** Forwards the destination applied whose event has no forward recorded `sent` (a stale one sent, or none). */
  readonly forwardUnexpected: string[];
  /** Per entity, in the destination's order, a forward of a lower version after a higher one. */
  readonly forwardOutOfOrder: string[];
  /** Entities whose last forward applied is not of their highest version. */
  readonly forwardBehind: string[];
  /** Forwards neither `sent` nor `stale` by the deadline (pending or dead). */
  readonly forwardUnsent: string[];
  readonly ok: boolean;
}

/** Judges a run; pure, so a unit test can feed it made-up observations. */
export function judge(observed: Observed): Verdict {
  const sentIds = new Set(observed.sent.map((e) => e.id));
  const ledger = new Map(observed.ledger.map((row) => [row.id, row]));
  const runs = new Map<string, number>();
  for (const a of observed.applications) runs.set(a.eventId, (runs.get(a.eventId) ?? 0) + 1);

  const lost = observed.sent
    .filter((e) => {
      const row = ledger.get(e.id);
      return row === undefined || (row.status === "settled" && !runs.has(e.id));
    })
    .map((e) => e.id);
  const duplicated = [...runs].filter(([, n]) => n > 1).map(([id]) => id);
  const unexpected = [
    ...new Set([
      ...observed.ledger.map((r) => r.id).filter((id) => !sentIds.has(id)),
      ...observed.applications.map((a) => a.eventId).filter((id) => !sentIds.has(id)),
    ]),
  ];
  const stuck = observed.ledger.filter((r) => r.status !== "settled" && r.status !== "dead").map((r) => r.id);
  const dead = observed.ledger.filter((r) => r.status === "dead").map((r) => r.id);

  // The winner of each entity: the highest rank among its ledger rows.
  const winners = new Map<string, LedgerRow>();
  for (const row of observed.ledger) {
    if (row.entity === null || !sentIds.has(row.id)) continue;
    const best = winners.get(row.entity);
    if (!best || row.rank > best.rank) winners.set(row.entity, row);
  }
  const state = new Map(observed.entities.map((e) => [e.id, e.eventId]));
  const wrongState = [...winners]
    .filter(([entity, row]) => state.get(entity) !== row.id)
    .map(([entity, row]) => `${entity}: ${state.get(entity) ?? "nothing"} instead of ${row.id}`);

  // Per entity, the applications (not the stale skips) in commit order must climb strictly in rank; a repeated
  // application of one event is counted as duplicated, not here.
  const outOfOrder: string[] = [];
  const last = new Map<string, { rank: number; id: string }>();
  const seen = new Set<string>();
  for (const a of [...observed.applications].sort((x, y) => x.seq - y.seq)) {
    if (a.stale || seen.has(a.eventId)) continue;
    seen.add(a.eventId);
    const rank = ledger.get(a.eventId)?.rank;
    if (rank === undefined) continue;
    const before = last.get(a.entity);
    if (before && rank <= before.rank) outOfOrder.push(`${a.entity}: ${a.eventId} after ${before.id}`);
    if (!before || rank > before.rank) last.set(a.entity, { rank, id: a.eventId });
  }

  // The outbound side: exactly the committed fresh applications have a message, each applied once by key.
  const committed = new Set(observed.applications.filter((a) => !a.stale).map((a) => a.eventId));
  const sentTwice = [...observed.destination].filter(([, keys]) => keys.size > 1).map(([id]) => id);
  const neverSent = [...committed].filter((id) => !observed.destination.has(id));
  const sentUncommitted = [...observed.destination.keys()].filter((id) => !committed.has(id));
  const outboxUnsent = observed.outbox
    .filter((m) => m.status !== "sent")
    .map((m) => `${m.eventId} ${m.status}`);

  // Forwards: each settled event's forward sent once (by webhook-id) or recorded stale; per entity the destination
  // saw versions that never go down (equal versions may come in either order) and ended on the highest.
  const forwardStatus = new Map(observed.forwards.map((f) => [f.eventId, f.status]));
  const appliedForwards = new Set(observed.forwarded.map((f) => f.eventId));
  const forwardTwice = [...observed.forwardKeys].filter(([, keys]) => keys.size > 1).map(([id]) => id);
  const forwardNever = observed.ledger
    .filter((r) => r.status === "settled")
    .filter((r) => {
      const status = forwardStatus.get(r.id);
      return status === undefined || (status === "sent" && !appliedForwards.has(r.id));
    })
    .map((r) => `${r.id} ${forwardStatus.get(r.id) ?? "no forward"}`);
  const forwardUnexpected = [...appliedForwards]
    .filter((id) => forwardStatus.get(id) !== "sent")
    .map((id) => `${id} ${forwardStatus.get(id) ?? "no forward"}`);
  const forwardOutOfOrder: string[] = [];
  const topForward = new Map<string, Forwarded>();
  const lastForward = new Map<string, Forwarded>();
  for (const f of observed.forwarded) {
    const top = topForward.get(f.entity);
    if (top && f.version < top.version)
      forwardOutOfOrder.push(`${f.entity}: ${f.eventId} after ${top.eventId}`);
    else topForward.set(f.entity, f);
    lastForward.set(f.entity, f);
  }
  const versionOf = new Map(observed.sent.map((e) => [e.id, e.version]));
  const highest = new Map<string, number>();
  for (const row of observed.ledger) {
    const version = versionOf.get(row.id);
    if (row.entity === null || version === undefined) continue;
    highest.set(row.entity, Math.max(highest.get(row.entity) ?? Number.NEGATIVE_INFINITY, version));
  }
  const forwardBehind = [...winners.keys()]
    .filter((entity) => lastForward.get(entity)?.version !== highest.get(entity))
    .map((entity) => {
      const last = lastForward.get(entity);
      return `${entity}: ${last ? `${last.eventId} (${versionOf.get(last.eventId)})` : "nothing"} below ${highest.get(entity)}`;
    });
  const forwardUnsent = observed.forwards
    .filter((f) => f.status !== "sent" && f.status !== "stale")
    .map((f) => `${f.eventId} ${f.status}`);

  const applied = observed.applications.filter((a) => !a.stale).length;
  const verdict = {
    sent: observed.sent.length,
    ledgerRows: observed.ledger.length,
    applied,
    staleSkips: observed.applications.length - applied,
    lost,
    ackedMissing: [...(observed.ackedMissing ?? [])],
    duplicated,
    unexpected,
    stuck,
    dead,
    wrongState,
    outOfOrder,
    sentTwice,
    neverSent,
    sentUncommitted,
    outboxUnsent,
    forwardedCount: observed.forwarded.length,
    forwardStale: observed.forwards.filter((f) => f.status === "stale").length,
    forwardTwice,
    forwardNever,
    forwardUnexpected,
    forwardOutOfOrder,
    forwardBehind,
    forwardUnsent,
  };
  // Every list is a rule; the run is clean when each is empty.
  const ok = Object.values(verdict).every((v) => !Array.isArray(v) || v.length === 0);
  return { ...verdict, ok };
}

/** Reads what the oracle judges from the database. */
export async function observe(
  db: pg.Pool,
  schema: string,
  sent: readonly SentEvent[],
  destination: Pick<DestinationReport, "applied" | "forwarded" | "forwardKeys">,
): Promise<Observed> {
  const ledger = await db.query<LedgerRow>(
    `select dedupe_key as id, entity_id as entity, status, outcome, attempts,
            (row_number() over (partition by entity_type, entity_id
                                order by entity_version, received_at, seq))::int as rank
       from "${schema}".events where source = $1`,
    [SOURCE],
  );
  const applications = await db.query<Application>(
    `select seq::int as seq, event_id as "eventId", entity, stale from ${APP_SCHEMA}.applications`,
  );
  const entities = await db.query<EntityState>(
    `select id, event_id as "eventId" from ${APP_SCHEMA}.entities`,
  );
  const outbox = await db.query<OutboxRow>(
    `select dedupe_key as "eventId", status from "${schema}".outbox where source = $1 and sender <> 'forward'`,
    [SOURCE],
  );
  const forwards = await db.query<ForwardRow>(
    `select dedupe_key as "eventId", status from "${schema}".outbox where source = $1 and sender = 'forward'`,
    [SOURCE],
  );
  return {
    sent,
    ledger: ledger.rows,
    applications: applications.rows,
    entities: entities.rows,
    outbox: outbox.rows,
    destination: destination.applied,
    forwards: forwards.rows,
    forwarded: destination.forwarded,
    forwardKeys: destination.forwardKeys,
  };
}

/** Unsettled ledger rows, sent events without a row and pending outbox messages: zero once the run has settled. */
export async function unsettled(db: pg.Pool, schema: string, sent: number): Promise<number> {
  const { rows } = await db.query<{ open: number; total: number; pending: number }>(
    `select count(*) filter (where status not in ('settled', 'dead'))::int as open, count(*)::int as total,
            (select count(*)::int from "${schema}".outbox where status = 'pending') as pending
       from "${schema}".events where source = $1`,
    [SOURCE],
  );
  const row = rows[0] ?? { open: 0, total: 0, pending: 0 };
  return row.open + Math.max(0, sent - row.total) + row.pending;
}

/** The verdict in a few lines: counts, and up to 5 examples of each violation. */
export function summary(v: Verdict): string {
  const lines = [
    `sent ${v.sent} · ledger rows ${v.ledgerRows} · applied ${v.applied} · stale skips ${v.staleSkips}`,
    `forwards applied ${v.forwardedCount} · recorded stale ${v.forwardStale}`,
  ];
  const checks: [string, string[]][] = [
    ["lost", v.lost],
    ["acked, then missing", v.ackedMissing],
    ["duplicated", v.duplicated],
    ["unexpected", v.unexpected],
    ["stuck", v.stuck],
    ["dead", v.dead],
    ["wrong final state", v.wrongState],
    ["out-of-order commits", v.outOfOrder],
    ["effect twice", v.sentTwice],
    ["effect never", v.neverSent],
    ["effect uncommitted", v.sentUncommitted],
    ["outbox unsent", v.outboxUnsent],
    ["forward twice", v.forwardTwice],
    ["forward never", v.forwardNever],
    ["forward unexpected", v.forwardUnexpected],
    ["forward out of order", v.forwardOutOfOrder],
    ["forward behind", v.forwardBehind],
    ["forward unsent", v.forwardUnsent],
  ];
  for (const [name, list] of checks) {
    const examples = list.length > 0 ? `  e.g. ${list.slice(0, 5).join(", ")}` : "";
    lines.push(`${name.padEnd(21)} ${String(list.length).padStart(6)}${examples}`);
  }
  lines.push(v.ok ? "verdict: PASS" : "verdict: FAIL");
  return lines.join("\n");
}
