import type { Pool } from "../db/pool.js";
import { listActions, recordAction } from "../ledger/actions.js";
import {
  type BrowseQuery,
  browseEvents,
  decodeCursor,
  encodeCursor,
  findEventsById,
} from "../ledger/browse.js";
import type { LedgerContext } from "../ledger/context.js";
import { listForwardAttempts, listForwardDestinations } from "../ledger/forward-destinations.js";
import { FORWARD_SENDER } from "../ledger/forward-write.js";
import { attemptErrors, entityHistory } from "../ledger/history.js";
import { getOutboxMessage, listOutbox, OUTBOX_STATUSES, retryOutbox } from "../ledger/outbox-inspect.js";
import { EVENT_OUTCOMES, EVENT_STATUSES, getEvent, getEventBody } from "../ledger/inspect.js";
import { countRequeue, type RequeueFilter, requeueEvents } from "../ledger/requeue.js";
import { type EventKey, retryEvents } from "../ledger/retry.js";
import { readDeliveryStats } from "../stats/query.js";
import { readLedgerStats } from "../stats/ledger.js";
import { healthSeries } from "../stats/series.js";

/** What an API route answers: a status and a JSON value, or raw bytes to download. */
export type ApiAnswer =
  | { readonly status: number; readonly json: unknown }
  | { readonly status: 200; readonly bytes: Buffer; readonly filename: string };

/** A request the client got wrong: answered 400 with its message. */
export class BadRequest extends Error {}

/** What the API routes need. */
export interface ApiContext {
  readonly db: Pool;
  readonly ledger: LedgerContext;
}

const WINDOWS: Record<string, { windowMs: number; bucketMs: number }> = {
  "1h": { windowMs: 3_600_000, bucketMs: 60_000 },
  "24h": { windowMs: 86_400_000, bucketMs: 900_000 },
};
const MAX_KEYS = 500;
const OUTBOX_PAGE = 200;
const FORWARD_ATTEMPTS = 100;

/**
 * The dashboard's read routes (`GET /dashboard/api/…`): `events`, `event`, `body`, `actions`, `health`,
 * `requeue-count`, `outbox`, `outbox-message` (with a forward's delivery attempts), `forwards` (the forward
 * destinations and their queues). Throws {@link BadRequest} for a query it cannot take.
 *
 * @example
 * const answer = await readRoute(context, "events", new URLSearchParams("status=dead"));
 */
export async function readRoute(
  context: ApiContext,
  route: string,
  query: URLSearchParams,
): Promise<ApiAnswer> {
  const { db, ledger } = context;
  switch (route) {
    case "events": {
      const id = text(query, "id");
      if (id !== undefined) return { status: 200, json: { events: await findEventsById(db, ledger, id) } };
      const page = await browseEvents(db, ledger, browseQuery(query));
      return { status: 200, json: { events: page.events, next: page.next && encodeCursor(page.next) } };
    }
    case "event": {
      const [source, key] = eventKey(query);
      const event = await getEvent(db, ledger, source, key);
      if (!event)
        return { status: 404, json: { error: "not_found", message: "no such event in the ledger" } };
      const [attempts, history] = await Promise.all([
        attemptErrors(db, ledger, source, key),
        event.entity ? entityHistory(db, ledger, event.entity.type, event.entity.id) : undefined,
      ]);
      return { status: 200, json: { event, attempts, entity: history ?? null } };
    }
    case "body": {
      const [source, key] = eventKey(query);
      const bytes = await getEventBody(db, ledger, source, key);
      if (!bytes)
        return { status: 404, json: { error: "not_found", message: "no such event in the ledger" } };
      return { status: 200, bytes, filename: `${source}-${key}`.replace(/[^A-Za-z0-9._-]/g, "_") };
    }
    case "actions":
      return { status: 200, json: { actions: await listActions(db, ledger, 50) } };
    case "outbox": {
      const filter = {
        ...optional("status", oneOf(query, "status", OUTBOX_STATUSES)),
        ...optional("source", text(query, "source")),
        ...optional("sender", text(query, "sender")),
      };
      return { status: 200, json: { messages: await listOutbox(db, ledger, filter, OUTBOX_PAGE) } };
    }
    case "outbox-message": {
      const key = text(query, "key");
      if (key === undefined) throw new BadRequest("key: the message's idempotency key is required");
      const message = await getOutboxMessage(db, ledger, key);
      if (!message) return { status: 404, json: { error: "not_found", message: "no such outbox message" } };
      const attempts =
        message.sender === FORWARD_SENDER
          ? await listForwardAttempts(db, ledger, message.source, message.eventId, FORWARD_ATTEMPTS)
          : null;
      return { status: 200, json: { message, attempts } };
    }
    case "forwards":
      return { status: 200, json: { destinations: await listForwardDestinations(db, ledger) } };
    case "requeue-count":
      return { status: 200, json: { count: await countRequeue(db, ledger, requeueFilter(query)) } };
    case "health": {
      const window = WINDOWS[query.get("window") ?? "1h"];
      if (!window) throw new BadRequest("window: use 1h or 24h");
      const source = text(query, "source");
      const scope = { windowMs: window.windowMs, ...(source !== undefined && { source }) };
      const [series, deliveries, ledgerStats] = await Promise.all([
        healthSeries(db, ledger, { ...scope, bucketMs: window.bucketMs }),
        readDeliveryStats(db, ledger, scope),
        readLedgerStats(db, ledger, scope),
      ]);
      return { status: 200, json: { ...series, sources: deliveries.sources, ledger: ledgerStats } };
    }
    default:
      return { status: 404, json: { error: "not_found", message: `no API route ${route}` } };
  }
}

/**
 * The dashboard's actions (`POST /dashboard/api/retry`, `…/requeue` and `…/outbox-retry`), each recorded with its
 * user.
 *
 * @example
 * await actionRoute(context, "retry", { events: [{ source: "stripe", dedupeKey: "evt_1" }] }, "alice");
 */
export async function actionRoute(
  context: ApiContext,
  route: string,
  body: unknown,
  actor: string,
): Promise<ApiAnswer> {
  const { db, ledger } = context;
  const input = (body ?? {}) as Record<string, unknown>;
  if (route === "retry") {
    const keys = eventKeys(input.events);
    const results = await retryEvents(db, ledger, keys);
    const counts: Record<string, number> = {};
    for (const r of results) counts[r.result] = (counts[r.result] ?? 0) + 1;
    await recordAction(db, ledger, { actor, action: "retry", events: keys, result: counts });
    return { status: 200, json: { results, counts } };
  }
  if (route === "requeue") {
    const filter = requeueFilter(new URLSearchParams(input.filter as Record<string, string>));
    const report = await requeueEvents(db, ledger, filter);
    await recordAction(db, ledger, { actor, action: "requeue", events: { filter }, result: report });
    return { status: 200, json: report };
  }
  if (route === "outbox-retry") {
    const which =
      input.keys === undefined
        ? { filter: outboxFilter(input.filter) }
        : { keys: stringList(input.keys, "keys: a list of 1 to 500 idempotency keys") };
    const retried = await retryOutbox(db, ledger, which);
    const events = "keys" in which ? which.keys : { filter: which.filter };
    await recordAction(db, ledger, {
      actor,
      action: "outbox-retry",
      events,
      result: { retried: retried.length },
    });
    return { status: 200, json: { retried } };
  }
  return { status: 404, json: { error: "not_found", message: `no action ${route}` } };
}

function browseQuery(query: URLSearchParams): BrowseQuery {
  const status = oneOf(query, "status", EVENT_STATUSES);
  const outcome = oneOf(query, "outcome", EVENT_OUTCOMES);
  const cursorText = text(query, "cursor");
  const cursor = cursorText === undefined ? undefined : decodeCursor(cursorText);
  if (cursorText !== undefined && !cursor)
    throw new BadRequest("cursor: pass back the `next` of the page before");
  const limit = text(query, "limit");
  if (limit !== undefined && !/^\d{1,3}$/.test(limit)) throw new BadRequest("limit: a number from 1 to 200");
  const entity = text(query, "entity");
  const [entityType, ...idParts] = entity?.split(":") ?? [];
  return {
    ...optional("source", text(query, "source")),
    ...optional("type", text(query, "type")),
    ...optional("status", status),
    ...optional("outcome", outcome),
    ...optional("entityType", entityType || undefined),
    ...optional("entityId", idParts.length > 0 ? idParts.join(":") : undefined),
    ...optional("since", time(query, "since")),
    ...optional("until", time(query, "until")),
    ...optional("cursor", cursor),
    ...optional("limit", limit === undefined ? undefined : Number(limit)),
    troubled: query.get("troubled") === "1",
  };
}

function requeueFilter(query: URLSearchParams): RequeueFilter {
  const status = query.get("status");
  if (status !== "dead" && status !== "failed")
    throw new BadRequest("status: requeue takes dead or failed events");
  return {
    status,
    ...optional("source", text(query, "source")),
    ...optional("type", text(query, "type")),
    ...optional("since", time(query, "since")),
    ...optional("until", time(query, "until")),
  };
}

function eventKey(query: URLSearchParams): [string, string] {
  const source = text(query, "source");
  const key = text(query, "key");
  if (source === undefined || key === undefined) throw new BadRequest("source and key: both are required");
  return [source, key];
}

function eventKeys(value: unknown): EventKey[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_KEYS) {
    throw new BadRequest(`events: a list of 1 to ${MAX_KEYS} { source, dedupeKey }`);
  }
  return value.map((k: { source?: unknown; dedupeKey?: unknown }) => {
    if (typeof k?.source !== "string" || typeof k.dedupeKey !== "string") {
      throw new BadRequest("events: each needs a source and a dedupeKey, both strings");
    }
    return { source: k.source, dedupeKey: k.dedupeKey };
  });
}

function outboxFilter(value: unknown): { source?: string; sender?: string } {
  const query = new URLSearchParams(
    value !== null && typeof value === "object" ? (value as Record<string, string>) : {},
  );
  return { ...optional("source", text(query, "source")), ...optional("sender", text(query, "sender")) };
}

function stringList(value: unknown, message: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_KEYS) throw new BadRequest(message);
  if (!value.every((k) => typeof k === "string" && k.length > 0 && k.length <= 500))
    throw new BadRequest(message);
  return value as string[];
}

function text(query: URLSearchParams, name: string): string | undefined {
  const value = query.get(name)?.trim();
  if (value === undefined || value === "") return undefined;
  if (value.length > 500) throw new BadRequest(`${name}: at most 500 characters`);
  return value;
}

function oneOf<T extends string>(query: URLSearchParams, name: string, allowed: readonly T[]): T | undefined {
  const value = text(query, name);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value))
    throw new BadRequest(`${name}: one of ${allowed.join(", ")}`);
  return value as T;
}

function time(query: URLSearchParams, name: string): Date | undefined {
  const value = text(query, name);
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new BadRequest(`${name}: an ISO 8601 time, e.g. 2026-12-01T09:00:00Z`);
  return date;
}

function optional<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}
