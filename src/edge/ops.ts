import type { RequestListener } from "node:http";
import { migrationsCurrent } from "../db/migrate.js";
import type { Pool } from "../db/pool.js";
import type { Answer } from "../errors.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../observability/metrics.js";

/**
 * Options of {@link createOpsHandler}.
 *
 * @example
 * const options: OpsOptions = { metrics, db: adminPool, ledger, log, timeoutMs: 1000 };
 */
export interface OpsOptions {
  /** Served on `GET /metrics`. */
  readonly metrics: Pick<Metrics, "registry">;
  /** The ledger's database, checked by `/readyz` (the service uses its admin pool). */
  readonly db: Pool;
  readonly ledger: LedgerContext;
  readonly log?: Logger;
  /**
   * `/readyz` answers 503 when the database has not answered by then.
   * @defaultValue 1000
   */
  readonly timeoutMs?: number;
  /**
   * Consulted before the database: a reason while the process is still starting (the service waits for the
   * database or for its migrations), `undefined` once it serves.
   * @defaultValue always `undefined`
   */
  readonly starting?: () => NotReadyReason | undefined;
}

/**
 * Why `/readyz` answered 503, in its JSON body.
 *
 * @example
 * // 503 {"status":"unavailable","reason":"migrations_pending"}: run `hookledger migrate`
 */
export type NotReadyReason =
  | "database_unreachable"
  | "database_timeout"
  | "migrations_pending"
  // The database answers and the schema is current, but the service has not finished starting.
  | "starting";

/**
 * The operational routes: `/metrics`, `/healthz`, `/readyz` (GET or HEAD).
 *
 * @example
 * // A fetch-style runtime:
 * const path = new URL(request.url).pathname;
 * if (ops.handles(path)) {
 *   const { status, headers, body } = await ops.answer(request.method, path);
 *   return new Response(request.method === "HEAD" ? null : body, { status, headers });
 * }
 */
export interface OpsHandler {
  /** Whether `path` (without its query string) is one of the ops routes. */
  handles(path: string): boolean;
  /** Answers a request to an ops route; never throws. */
  answer(method: string, path: string): Promise<Answer>;
}

const PATHS = new Set(["/metrics", "/healthz", "/readyz"]);
const NO_STORE = { "cache-control": "no-store" };
const json = (status: number, body: unknown): Answer => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", ...NO_STORE },
  body: JSON.stringify(body),
});

/**
 * Creates the operational routes:
 * - `GET /healthz`: 200 `{"status":"ok"}` while the process runs (liveness; it never touches the database).
 * - `GET /readyz`: 200 `{"status":"ready"}` when `select 1` and the migrations check answer within `timeoutMs`
 *   and every shipped migration is applied; otherwise 503 `{"status":"unavailable","reason":…}` with a
 *   {@link NotReadyReason} (while `starting` gives one, that one, without asking the database).
 * - `GET /metrics`: the Prometheus text format of `metrics.registry`.
 *
 * @example
 * const ops = createOpsHandler({ metrics, db: adminPool, ledger });
 * http.createServer(withOps(ops, createNodeHandler(receiver))).listen(3000);
 */
export function createOpsHandler(options: OpsOptions): OpsHandler {
  const timeoutMs = options.timeoutMs ?? 1000;
  const { log } = options;

  const readiness = async (): Promise<NotReadyReason | undefined> => {
    const starting = options.starting?.();
    if (starting !== undefined) return starting;
    try {
      await options.db.query("select 1");
    } catch (error) {
      log?.warn({ err: (error as Error).message }, "readiness: the database did not answer");
      return "database_unreachable";
    }
    try {
      return (await migrationsCurrent(options.db, options.ledger.schema)) ? undefined : "migrations_pending";
    } catch (error) {
      // undefined_table / invalid_schema_name: the ledger was never migrated.
      const code = (error as { code?: string }).code;
      if (code === "42P01" || code === "3F000") return "migrations_pending";
      log?.warn({ err: (error as Error).message }, "readiness: the migrations check failed");
      return "database_unreachable";
    }
  };

  const ready = async (): Promise<Answer> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<NotReadyReason>((resolve) => {
      timer = setTimeout(() => resolve("database_timeout"), timeoutMs);
    });
    const reason = await Promise.race([readiness(), late]);
    clearTimeout(timer);
    return reason === undefined
      ? json(200, { status: "ready" })
      : json(503, { status: "unavailable", reason });
  };

  const scrape = async (): Promise<Answer> => {
    const { registry } = options.metrics;
    return {
      status: 200,
      headers: { "content-type": registry.contentType, ...NO_STORE },
      body: await registry.metrics(),
    };
  };

  return {
    handles: (path) => PATHS.has(path),
    async answer(method, path) {
      if (!PATHS.has(path)) return json(404, { error: "not_found" });
      if (method !== "GET" && method !== "HEAD") {
        const refused = json(405, { error: "method_not_allowed" });
        return { ...refused, headers: { ...refused.headers, allow: "GET, HEAD" } };
      }
      try {
        if (path === "/healthz") return json(200, { status: "ok" });
        if (path === "/readyz") return await ready();
        return await scrape();
      } catch (error) {
        log?.error({ path, err: (error as Error).message }, "ops route failed");
        return { status: 500, headers: NO_STORE, body: "" };
      }
    },
  };
}

/**
 * node:http: sends requests to the ops routes to `ops` and everything else to `next` (the webhook handler).
 *
 * @example
 * http.createServer(withOps(createOpsHandler({ metrics, db, ledger }), createNodeHandler(receiver)));
 */
export function withOps(ops: OpsHandler, next: RequestListener): RequestListener {
  return (req, res) => {
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    if (!ops.handles(path)) {
      next(req, res);
      return;
    }
    ops.answer(req.method ?? "GET", path).then(
      (answer) => res.writeHead(answer.status, answer.headers).end(answer.body),
      () => res.writeHead(500).end(),
    );
  };
}
