import type PgTypes from "pg";
import { pg } from "../deps.js";
import type { PoolClient } from "./pool.js";

/** A statement sent ahead of a query: SQL text without parameters, or a prepared statement's name and values. */
export type Step =
  | { readonly text: string }
  | { readonly statement: string; readonly values: readonly string[] };

/** How the steps ahead of a query ended: all ran (with the last one's row count), or one failed. */
export type AheadResult =
  | { readonly ok: true; readonly rowCount: number | null }
  | { readonly ok: false; readonly error: Error };

/** A query sent with steps ahead of it; `result` rejects with the step's error when a step failed. */
export interface Pipelined {
  readonly ahead: Promise<AheadResult>;
  readonly result: Promise<unknown>;
}

// What `pg` hands a query object (pg's Submittable protocol, which pg-cursor and pg-query-stream also build on).
interface Wire {
  readonly stream: { cork?: () => void; uncork?: () => void };
  parse(query: { text: string; name: string; types: unknown[] }): void;
  bind(config: { statement: string; values: readonly string[] }): void;
  execute(config: { portal: string }): void;
  sync(): void;
}
interface Message {
  /** A CommandComplete's tag: `UPDATE 1`, `INSERT 0 2`, `SAVEPOINT`. */
  readonly text?: string;
}
interface InnerQuery {
  name?: string;
  rows?: number;
  binary?: boolean;
  callback?: (error: Error | null, result?: unknown) => void;
  _result?: { _types?: unknown };
  requiresPreparation(): boolean;
  submit(connection: Wire): Error | null;
  handleRowDescription(msg: Message): void;
  handleDataRow(msg: Message): void;
  handleCommandComplete(msg: Message, connection: Wire): void;
  handleEmptyQuery(connection: Wire): void;
  handlePortalSuspended(connection: Wire): void;
  handleCopyInResponse(connection: Wire): void;
  handleCopyData(msg: Message, connection: Wire): void;
  handleError(error: Error, connection: Wire): void;
  handleReadyForQuery(connection: Wire): void;
}
interface ClientInternals {
  readonly connection?: { parse?: unknown };
  readonly pipeline?: boolean;
  readonly binary?: boolean;
  readonly _types?: unknown;
  readonly connectionParameters?: { query_timeout?: number };
}

/**
 * Sends `steps` and the query `args` (as a handler would pass them to `client.query`) in one round trip: the steps
 * in the extended protocol with no Sync of their own, then the query's Parse/Bind/Describe/Execute/Sync, all in one
 * write. A failed step makes the server skip the rest up to that Sync, so the query never runs. Only a query `pg`
 * sends in the extended protocol, unnamed, in one piece and resolving a promise can follow the steps this way (a
 * simple-protocol query after unsynced steps would be skipped without an answer after a failed step); for any other
 * the result is `undefined` and the caller sends the steps on their own.
 *
 * Hand-written because `pg` has no way to put statements ahead of another caller's query in one round trip: its
 * pipeline mode is a property of the whole client, which here is a pool's (possibly the app's).
 *
 * @example
 * const sent = queryAfter(client, [{ text: "savepoint a" }], ["insert into t values ($1)", [1]]);
 * if (sent && !(await sent.ahead).ok) throw new Error("the savepoint failed; the insert never ran");
 */
export function queryAfter(
  client: PoolClient,
  steps: readonly Step[],
  args: readonly unknown[],
): Pipelined | undefined {
  const internals = client as unknown as ClientInternals;
  if (typeof internals.connection?.parse !== "function" || internals.pipeline) return undefined;
  if (internals.connectionParameters?.query_timeout) return undefined;
  const [config, values] = args;
  if (args.length > 2 || (values !== undefined && !Array.isArray(values))) return undefined;
  if (typeof config !== "string" && !plainConfig(config)) return undefined;
  const Query = ((client.constructor as { Query?: unknown }).Query ?? pg().Query) as new (
    config: unknown,
    values?: unknown,
  ) => InnerQuery;
  const inner = new Query(config, values);
  if (inner.name || inner.rows || inner.callback || !inner.requiresPreparation()) return undefined;
  // What `client.query` does to the queries it builds.
  if (internals.binary && !inner.binary) inner.binary = true;
  if (inner._result && !inner._result._types) inner._result._types = internals._types;
  const result = new Promise<unknown>((resolve, reject) => {
    inner.callback = (error, value) => (error ? reject(error) : resolve(value));
  }).catch((error: unknown) => {
    // As `client.query` does: the stack leads back to the caller, not to the socket's read.
    if (error instanceof Error) Error.captureStackTrace(error);
    throw error;
  });
  const ahead = new Promise<AheadResult>((resolve) => {
    client.query(new StepsAhead(steps, inner, resolve) as unknown as PgTypes.Submittable);
  });
  return { ahead, result };
}

function plainConfig(config: unknown): boolean {
  if (config === null || typeof config !== "object") return false;
  const c = config as Record<string, unknown>;
  return typeof c.text === "string" && typeof c.submit !== "function" && c.query_timeout === undefined;
}

// The query object `pg` runs: it writes the steps and the inner query, takes the steps' answers for itself and hands
// every later message to the inner query. One ReadyForQuery ends both, as `pg` expects of one query.
class StepsAhead {
  private left: number;
  private settled = false;
  private innerError: Error | undefined;

  constructor(
    private readonly steps: readonly Step[],
    private readonly inner: InnerQuery,
    private readonly resolve: (result: AheadResult) => void,
  ) {
    this.left = steps.length;
  }

  submit(connection: Wire): null {
    connection.stream.cork?.();
    try {
      for (const step of this.steps) {
        if ("text" in step) {
          connection.parse({ text: step.text, name: "", types: [] });
          connection.bind({ statement: "", values: [] });
        } else connection.bind({ statement: step.statement, values: step.values });
        connection.execute({ portal: "" });
      }
      const error = this.inner.submit(connection);
      if (error) {
        // Nothing of the query was written: end the round trip, then fail the query.
        this.innerError = error;
        connection.sync();
      }
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  private done(result: AheadResult): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(result);
  }

  handleCommandComplete(msg: Message, connection: Wire): void {
    if (this.left === 0) {
      this.inner.handleCommandComplete(msg, connection);
      return;
    }
    this.left -= 1;
    if (this.left > 0) return;
    const count = /\s(\d+)$/.exec(msg.text ?? "")?.[1];
    this.done({ ok: true, rowCount: count === undefined ? null : Number(count) });
  }

  handleError(error: Error, connection: Wire): void {
    if (this.left === 0) {
      this.inner.handleError(error, connection);
      return;
    }
    this.done({ ok: false, error });
    this.inner.callback?.(error);
  }

  handleReadyForQuery(connection: Wire): void {
    if (this.left > 0) {
      if (this.settled) return; // handleError has failed the steps and the query already.
      const error = new Error("the server answered a pipelined query without running the steps ahead of it");
      this.done({ ok: false, error });
      this.inner.callback?.(error);
      return;
    }
    if (this.innerError) this.inner.callback?.(this.innerError);
    else this.inner.handleReadyForQuery(connection);
  }

  handleRowDescription(msg: Message): void {
    this.inner.handleRowDescription(msg);
  }
  handleDataRow(msg: Message): void {
    this.inner.handleDataRow(msg);
  }
  handleEmptyQuery(connection: Wire): void {
    this.inner.handleEmptyQuery(connection);
  }
  handlePortalSuspended(connection: Wire): void {
    this.inner.handlePortalSuspended(connection);
  }
  handleCopyInResponse(connection: Wire): void {
    this.inner.handleCopyInResponse(connection);
  }
  handleCopyData(msg: Message, connection: Wire): void {
    this.inner.handleCopyData(msg, connection);
  }
}
