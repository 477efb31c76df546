import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Pool } from "../db/pool.js";
import type { LedgerContext } from "../ledger/context.js";
import type { Logger } from "../log.js";
import { clientKey, failureLimiter } from "../edge/failure-limit.js";
import { nodeHeaders } from "../adapters/node/io.js";
import { packageFile } from "../files.js";
import { type ApiAnswer, actionRoute, BadRequest, readRoute } from "./api.js";
import { CSRF_HEADER, type DashboardUser, dashboardAuth, SIGNED_OUT, type Session } from "./auth.js";
import { loginPage } from "./login-page.js";

/**
 * Options of {@link createDashboard}.
 *
 * @example
 * const options: DashboardOptions = { db: adminPool, ledger, users: [{ name: "alice", token }], log };
 */
export interface DashboardOptions {
  /** The ledger's database (the service's admin pool). */
  readonly db: Pool;
  readonly ledger: LedgerContext;
  /**
   * Who may sign in, each token 16 characters or more (a shorter one throws). Empty: every sign-in is refused, and
   * the login page says how to add a user.
   */
  readonly users: readonly DashboardUser[];
  /** A user whose token also works as `GET /dashboard/login?key=…`: the demo's local login link. */
  readonly loginLinkUser?: string;
  /**
   * Count wrong sign-ins against the last `X-Forwarded-For` entry instead of the connection's address (only behind
   * a proxy that appends it).
   * @defaultValue false
   */
  readonly trustProxy?: boolean;
  readonly log?: Logger;
}

/**
 * The dashboard: a `RequestListener` for every path under `/dashboard`, and the login link when there is one.
 *
 * @example
 * const dashboard = createDashboard({ db, ledger, users });
 * http.createServer((req, res) => (dashboard.handles(req.url ?? "/") ? dashboard.listener(req, res) : next(req, res)));
 */
export interface Dashboard {
  /** Whether `url` (path and query) is the dashboard's. */
  handles(url: string): boolean;
  readonly listener: RequestListener;
  /** The path (under `/dashboard`) that signs the login-link user in, with its key. */
  readonly loginLinkPath: string | undefined;
}

const BASE = "/dashboard";
const MAX_JSON = 64 * 1024;
// No inline script or style anywhere: the page's own files only, no framing, no form posting elsewhere. The
// referrer stays on this origin (the demo's login link holds its key), but not "no-referrer": under it a browser
// sends `Origin: null` with the sign-in form's POST, which sameOrigin() must refuse.
const SECURITY = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};
const ASSETS: Record<string, string> = {
  "app.js": "text/javascript; charset=utf-8",
  "dom.js": "text/javascript; charset=utf-8",
  "list.js": "text/javascript; charset=utf-8",
  "ops.js": "text/javascript; charset=utf-8",
  "outbox.js": "text/javascript; charset=utf-8",
  "charts.js": "text/javascript; charset=utf-8",
  "app.css": "text/css; charset=utf-8",
  "index.html": "text/html; charset=utf-8",
};

/**
 * Creates the dashboard (docs/dashboard.md): the events list, one event, dead and failed events with bulk retry and
 * requeue, health charts, and the record of actions. Every page and API route but the login page and the static
 * files needs a session; every action also needs the session's CSRF header and a same-origin request.
 *
 * @example
 * const dashboard = createDashboard({ db: adminPool, ledger, users: config.dashboard.users, log });
 */
export function createDashboard(options: DashboardOptions): Dashboard {
  const { log } = options;
  for (const user of options.users) {
    // An empty or short token falls to guessing: ten wrong sign-ins a minute per address slow it, no more.
    if (typeof user.token !== "string" || user.token.length < 16) {
      throw new TypeError(`createDashboard: the token of user '${user.name}' needs 16 characters or more`);
    }
  }
  const auth = dashboardAuth(options.users);
  // Ten wrong tokens a minute from one address, then every sign-in from it waits out the minute, a right one too:
  // a guesser learns nothing from the answers meanwhile.
  const guesses = failureLimiter({ maxFailures: 10, windowMs: 60_000 });
  const linkUser = options.users.find((u) => u.name === options.loginLinkUser);
  const assets = new Map(
    Object.entries(ASSETS).map(([name, type]) => {
      const bytes = readFileSync(packageFile(`dashboard/assets/${name}`));
      return [
        name,
        { bytes, type, etag: `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 22)}"` },
      ];
    }),
  );

  const send = (
    res: ServerResponse,
    status: number,
    headers: Record<string, string>,
    body: string | Buffer = "",
  ) => res.writeHead(status, { ...SECURITY, ...headers }).end(body);
  const json = (res: ServerResponse, status: number, value: unknown) =>
    send(res, status, { "content-type": "application/json; charset=utf-8" }, JSON.stringify(value));
  const redirect = (res: ServerResponse, to: string, cookie?: string) =>
    send(res, 303, { location: to, ...(cookie && { "set-cookie": cookie }) });
  const page = (res: ServerResponse, status: number, html: string) =>
    send(res, status, { "content-type": "text/html; charset=utf-8" }, html);

  // The admin listener speaks plain HTTP; behind a TLS proxy (trustProxy) the cookie is marked Secure.
  const https = (req: IncomingMessage) =>
    options.trustProxy === true && header(req, "x-forwarded-proto")?.split(",")[0]?.trim() === "https";
  const tooMany = (res: ServerResponse, seconds: number) =>
    send(
      res,
      429,
      { "content-type": "text/plain; charset=utf-8", "retry-after": String(seconds) },
      `Too many sign-ins with a wrong token from this address; try again in ${seconds} s.\n`,
    );

  const answerApi = (res: ServerResponse, answer: ApiAnswer) => {
    if ("bytes" in answer) {
      send(
        res,
        200,
        {
          "content-type": "application/octet-stream",
          "content-disposition": `attachment; filename="${answer.filename}.body"`,
        },
        answer.bytes,
      );
    } else json(res, answer.status, answer.json);
  };

  const login = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    if (req.method === "GET") {
      const key = url.searchParams.get("key");
      if (key !== null && linkUser && auth.signIn(key) === linkUser.name) {
        return redirect(res, `${BASE}/`, auth.cookieFor(linkUser.name, https(req)));
      }
      return page(res, key === null ? 200 : 401, loginPage(options.users.length > 0, key !== null));
    }
    if (req.method !== "POST") return send(res, 405, { allow: "GET, POST" });
    if (!sameOrigin(req)) return page(res, 403, loginPage(options.users.length > 0, true));
    const form = new URLSearchParams((await readBody(req, MAX_JSON)).toString("utf8"));
    const from =
      clientKey(req.socket.remoteAddress, nodeHeaders(req), options.trustProxy ?? false) ?? "unknown";
    const wait = guesses.blocked(from, Date.now());
    if (wait !== undefined) return tooMany(res, wait);
    const user = auth.signIn(form.get("token") ?? "");
    if (!user) {
      log?.warn({ from }, "dashboard: a sign-in with an unknown token");
      const over = guesses.fail(from, Date.now());
      if (over !== undefined) return tooMany(res, over);
      return page(res, 401, loginPage(options.users.length > 0, true));
    }
    log?.info({ user }, "dashboard: signed in");
    return redirect(res, `${BASE}/`, auth.cookieFor(user, https(req)));
  };

  const api = async (req: IncomingMessage, res: ServerResponse, url: URL, session: Session) => {
    const route = url.pathname.slice(`${BASE}/api/`.length);
    const context = { db: options.db, ledger: options.ledger };
    if (req.method === "GET" || req.method === "HEAD") {
      if (route === "session") return json(res, 200, { user: session.user, csrf: session.csrf });
      return answerApi(res, await readRoute(context, route, url.searchParams));
    }
    if (req.method !== "POST") return send(res, 405, { allow: "GET, POST" });
    if (!sameOrigin(req) || !auth.csrfMatches(session, header(req, CSRF_HEADER))) {
      return json(res, 403, {
        error: "forbidden",
        message: "reload the page: this action lacks its CSRF token",
      });
    }
    if (route === "logout") return redirect(res, `${BASE}/login`, SIGNED_OUT);
    if (!/^application\/json\b/i.test(header(req, "content-type") ?? "")) {
      return json(res, 415, { error: "unsupported_media_type", message: "send JSON" });
    }
    // Read first: a body over the cap is a 413, not a JSON error.
    const text = (await readBody(req, MAX_JSON)).toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new BadRequest("the body is not JSON");
    }
    const answer = await actionRoute(context, route, body, session.user);
    log?.info({ user: session.user, action: route }, "dashboard: action");
    return answerApi(res, answer);
  };

  const route = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://dashboard.invalid");
    const path = url.pathname;
    if (path === `${BASE}/login`) return login(req, res, url);
    if (path.startsWith(`${BASE}/assets/`)) {
      const asset = assets.get(path.slice(`${BASE}/assets/`.length));
      if (!asset || path.endsWith("index.html")) return json(res, 404, { error: "not_found" });
      if (header(req, "if-none-match") === asset.etag) return send(res, 304, { etag: asset.etag });
      return send(
        res,
        200,
        { "content-type": asset.type, etag: asset.etag, "cache-control": "no-cache" },
        asset.bytes,
      );
    }
    const session = auth.session(header(req, "cookie"));
    if (path.startsWith(`${BASE}/api/`)) {
      if (!session) return json(res, 401, { error: "unauthorized", message: "sign in at /dashboard/login" });
      return api(req, res, url, session);
    }
    if (!session) return redirect(res, `${BASE}/login`);
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, { allow: "GET" });
    const shell = assets.get("index.html");
    return send(res, 200, { "content-type": "text/html; charset=utf-8" }, shell?.bytes ?? "");
  };

  return {
    handles: (url) => url === BASE || url.startsWith(`${BASE}/`) || url.startsWith(`${BASE}?`),
    loginLinkPath: linkUser && `${BASE}/login?key=${encodeURIComponent(linkUser.token)}`,
    listener(req, res) {
      route(req, res).catch((error: Error) => {
        if (res.headersSent) return void res.destroy();
        if (error instanceof BadRequest)
          return json(res, 400, { error: "bad_request", message: error.message });
        if (error instanceof TooLarge) return json(res, 413, { error: "too_large", message: error.message });
        // query_canceled: the pool's statement timeout (mount.ts).
        if ((error as { code?: string }).code === "57014") {
          log?.warn(
            { path: (req.url ?? "").split("?")[0] },
            "dashboard: a query ran past its statement timeout",
          );
          return json(res, 503, { error: "too_slow", message: "the query took too long; narrow the filter" });
        }
        log?.error({ path: (req.url ?? "").split("?")[0], err: error.message }, "dashboard route failed");
        send(res, 500, {});
      });
    },
  };
}

class TooLarge extends Error {}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

// SameSite=Strict keeps the cookie off other sites' requests; this also refuses any request a browser marks as
// coming from another origin, for browsers or proxies that drop SameSite.
function sameOrigin(req: IncomingMessage): boolean {
  const site = header(req, "sec-fetch-site");
  if (site !== undefined && site !== "same-origin" && site !== "none") return false;
  const origin = header(req, "origin");
  if (origin === undefined || origin === "null") return origin === undefined;
  try {
    return new URL(origin).host === header(req, "host");
  } catch {
    return false;
  }
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw new TooLarge(`at most ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
