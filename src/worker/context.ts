import type { PoolClient } from "../db/pool.js";
import { advanceVersion } from "../ledger/advance.js";
import type { LedgerContext } from "../ledger/context.js";
import { HANDLER_ENDED_TRANSACTION, type PickedEvent } from "../ledger/pick.js";
import { encodeVersion } from "../ledger/version.js";
import type { ArmGate } from "./arm-gate.js";
import { outboxWriter } from "../outbox/writer.js";
import type { HandlerContext, HandlerEvent } from "./handlers.js";

/** Rejects a handler's later queries once its attempt is over (it timed out or was abandoned and kept going). */
class AttemptOverError extends Error {}

// A handler that commits (or rolls back) the event's transaction would release the row lock before the settle:
// a crash right then would apply the event twice. Such statements are refused with a message naming the cause.
// The pattern only catches the plain spellings; a comment first or a multi-statement string gets past it, and is
// caught after the fact by the connection's transaction status (see `endedTransaction`).
const TRANSACTION_CONTROL =
  /^\s*(begin|start\s+transaction|commit|end|rollback|abort|release|savepoint|prepare\s+transaction)\b/i;

function queryText(arg: unknown): string {
  if (typeof arg === "string") return arg;
  if (arg !== null && typeof arg === "object" && typeof (arg as { text?: unknown }).text === "string") {
    return (arg as { text: string }).text;
  }
  return "";
}

/** A handler's context and what the attempt needs to know about it afterwards. */
export interface AttemptContext {
  readonly ctx: HandlerContext;
  /** True once any `ctx.advance()` returned false. */
  stale(): boolean;
  /** True once the handler called `ctx.ignore()`. */
  ignored(): boolean;
  /** The settle outcome of a handler that returned: `stale` wins over `ignored`, else `applied`. */
  outcome(): "applied" | "stale" | "ignored";
  /** True once a query of the handler ended the event's transaction (a commit or rollback however spelled). */
  endedTransaction(): boolean;
  /** Ends the attempt: the handler's `ctx.tx` refuses every later query. */
  end(): void;
}

/**
 * Builds the context a handler runs with: the event, `ctx.tx` (the event's transaction, guarded: it cannot be
 * released, its transaction cannot be ended, and it refuses queries once the attempt is over), the version guard
 * and `ctx.outbox`. `gate`: what sends the event's arm ahead of the handler's first query (arm-gate.ts); `senders`:
 * the names `ctx.outbox.send` accepts (undefined: any).
 */
export function attemptContext(
  client: PoolClient,
  ledger: LedgerContext,
  picked: PickedEvent,
  options: { readonly gate?: ArmGate | undefined; readonly senders?: readonly string[] | undefined } = {},
): AttemptContext {
  const { gate } = options;
  let over = false;
  let ended = false;
  let stale = false;
  let ignored = false;
  const name = `${picked.source}/${picked.dedupe_key}`;
  const event = toHandlerEvent(picked);
  const tx = new Proxy(client, {
    get(target, property, receiver) {
      if (property === "release") {
        return () => {
          throw new Error("hookledger owns this transaction: do not release it");
        };
      }
      if (property === "query") {
        return (...args: unknown[]) => {
          if (over) return Promise.reject(new AttemptOverError(`the attempt for ${name} is over`));
          if (TRANSACTION_CONTROL.test(queryText(args[0]))) {
            return Promise.reject(
              new Error(
                `hookledger owns the transaction of ${name}: a handler must not begin, commit or roll back`,
              ),
            );
          }
          const result = gate
            ? gate.query(target, args)
            : (target.query as (...a: unknown[]) => unknown).apply(target, args);
          if (!(result instanceof Promise)) return result;
          const check = () => {
            // pg reads the status from the server's ReadyForQuery, before it settles the query: "I" is outside
            // any transaction, so the statement just run ended the event's.
            if ((target as { getTransactionStatus?: () => string | null }).getTransactionStatus?.() !== "I")
              return;
            ended = true;
            over = true;
            throw new Error(`${name}: ${HANDLER_ENDED_TRANSACTION}`);
          };
          return result.then(
            (value: unknown) => {
              check();
              return value;
            },
            (error: unknown) => {
              check();
              throw error;
            },
          );
        };
      }
      return Reflect.get(target, property, receiver);
    },
  });
  const ctx: HandlerContext = {
    event,
    tx,
    async advance(entityType, entityId, version) {
      const type = entityType ?? event.entity?.type;
      const id = entityId ?? event.entity?.id;
      const v = version ?? event.entity?.version;
      if (type === undefined || id === undefined || v === undefined) {
        throw new Error(`advance() needs an entity: ${picked.source}/${picked.event_type} reports none`);
      }
      const encoded = encodeVersion(v, "ms");
      if (!encoded.ok) {
        throw new Error(
          `advance(): version ${JSON.stringify(v)} of ${type} ${id} is neither a number nor a date (Date or ISO 8601)`,
        );
      }
      const advanced = await advanceVersion(tx, ledger, {
        entityType: type,
        entityId: id,
        version: encoded.version,
        source: picked.source,
        dedupeKey: picked.dedupe_key,
        receivedAt: picked.received_at,
        seq: picked.seq,
      });
      if (!advanced) stale = true;
      return advanced;
    },
    ignore() {
      ignored = true;
    },
    outbox: outboxWriter(
      tx,
      ledger,
      { source: picked.source, dedupeKey: picked.dedupe_key },
      options.senders,
    ),
  };
  return {
    ctx,
    stale: () => stale,
    ignored: () => ignored,
    outcome: () => (stale ? "stale" : ignored ? "ignored" : "applied"),
    endedTransaction: () => ended,
    end: () => {
      over = true;
    },
  };
}

function toHandlerEvent(picked: PickedEvent): HandlerEvent {
  return {
    id: picked.dedupe_key,
    source: picked.source,
    type: picked.event_type,
    payload: picked.payload,
    receivedAt: picked.received_at,
    occurredAt: picked.occurred_at,
    attempt: picked.attempts,
    entity:
      picked.entity_type !== null && picked.entity_id !== null && picked.entity_version !== null
        ? { type: picked.entity_type, id: picked.entity_id, version: picked.entity_version }
        : null,
    arrivedVia: picked.arrived_via,
  };
}
