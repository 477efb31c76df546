import { receiveNode } from "../node/io.js";
import type { Application, Request, RequestHandler } from "express";
import { type Answer, answerError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { Receiver } from "../../edge/receiver.js";
import { writeAnswer } from "../node/io.js";
import { sourceFromPath } from "../../edge/route.js";

/**
 * Options of {@link createExpressHandler}.
 *
 * @example
 * const options: ExpressHandlerOptions = { basePath: "/webhooks", log };
 */
export interface ExpressHandlerOptions {
  /**
   * Where deliveries arrive when the route has no `:source` parameter (`app.use("/webhooks", handler)`); the next
   * path segment names the source.
   * @defaultValue "/webhooks"
   * @example createExpressHandler(receiver, { basePath: "/api/hooks" })
   */
  readonly basePath?: string;
  /**
   * Where a body parser that ran first is reported (pass the receiver's logger).
   * @defaultValue the receiver's logger
   * @example createExpressHandler(receiver, { log })
   */
  readonly log?: Logger;
}

const handlers = new WeakSet<object>();

/**
 * The Express adapter (Express 4 and 5). It reads the raw body itself: mount it with `app.all` (so other methods get
 * hookledger's 405) and before any `express.json()`. A body that a parser already consumed is answered 500 with
 * the cause and the fix, and logged; a `Buffer` left by `express.raw()` is the exact bytes and is accepted.
 *
 * @example
 * const app = express();
 * app.all("/webhooks/:source", createExpressHandler(receiver, { log }));
 * app.use(express.json()); // the app's other routes
 * assertNoBodyParserBefore(app);
 */
export function createExpressHandler(
  receiver: Receiver,
  options: ExpressHandlerOptions = {},
): RequestHandler {
  const basePath = options.basePath ?? "/webhooks";
  const log = options.log ?? receiver.log;
  const handler: RequestHandler = (req, res) => {
    const param: unknown = req.params?.source;
    const source =
      typeof param === "string" ? param : sourceFromPath(pathOf(req.originalUrl ?? req.url), basePath);
    answer(receiver, log, req, source).then(
      (reply) => writeAnswer(req, res, reply),
      (error: Error) => {
        log.error({ source, err: error.message }, "the express adapter failed");
        writeAnswer(req, res, answerError("internal"));
      },
    );
  };
  handlers.add(handler);
  return handler;
}

async function answer(
  receiver: Receiver,
  log: Logger,
  req: Request,
  source: string | undefined,
): Promise<Answer> {
  if (source === undefined) return answerError("not_found");
  return receiveNode(receiver, log, "express", req, source);
}

const pathOf = (url: string): string => url.split("?")[0] ?? "/";

// The parts of Express's router this check reads (Express 4: app._router; Express 5: app.router).
interface Layer {
  readonly name: string;
  readonly path?: string;
  readonly handle: unknown;
  readonly method?: string;
  readonly route?: { readonly stack: readonly Layer[] };
  /** Router 2 (Express 5) returns what matched; Express 4's router returns a boolean and sets `path`. */
  match(path: string): boolean | { readonly path: string };
}
type Stack = { readonly stack?: readonly Layer[] };

const PARSERS = new Set(["jsonParser", "urlencodedParser", "textParser", "bodyParser"]);

/**
 * Fails at start when a body parser would run before hookledger's handler for a delivery to `path`: it walks the
 * app's router (and mounted routers) in order, as Express would for `POST path`. Call it after mounting every
 * route, before `listen`. It reads Express's router internals, so it checks `express.json()`,
 * `express.urlencoded()` and `express.text()` (and body-parser 1.x) by name; the per-delivery check is the backstop.
 *
 * @throws Error naming the parser and the fix, or saying that no hookledger handler answers `path`.
 * @example
 * app.all("/webhooks/:source", createExpressHandler(receiver));
 * app.use(express.json());
 * assertNoBodyParserBefore(app, "/webhooks/stripe"); // passes: the parser is mounted after
 */
export function assertNoBodyParserBefore(app: Application, path = "/webhooks/source"): void {
  const internals = app as unknown as { _router?: Stack; router?: Stack };
  let router: Stack | undefined = internals._router;
  try {
    router ??= internals.router;
  } catch {
    // Express 4 throws on `app.router`; its `_router` is unset until a route or middleware is added.
  }
  const found = scan(router ?? {}, path);
  if (found === "handler") return;
  if (found === undefined) {
    throw new Error(`no hookledger handler (createExpressHandler) answers POST ${path}`);
  }
  throw new Error(
    `${found} runs before hookledger's handler for POST ${path}: it would consume the webhook's raw bytes and ` +
      `every signature would fail. Mount hookledger's route before it, or mount it on your other routes only.`,
  );
}

function scan(router: Stack, path: string): string | undefined {
  for (const layer of router.stack ?? []) {
    const match = layer.match(path);
    if (!match) continue;
    const inRoute = layer.route ? scanRoute(layer.route.stack) : undefined;
    if (inRoute) return inRoute;
    if (layer.route) continue;
    if (handlers.has(layer.handle as object)) return "handler";
    if (PARSERS.has(layer.name)) return `${layer.name} (${layer.name.replace("Parser", "")} body parser)`;
    const nested = layer.handle as Stack;
    const matched = typeof match === "object" ? match.path : (layer.path ?? "");
    const inner = nested.stack ? scan(nested, path.slice(matched.length) || "/") : undefined;
    if (inner) return inner;
  }
  return undefined;
}

function scanRoute(stack: readonly Layer[]): string | undefined {
  for (const layer of stack) {
    if (layer.method !== undefined && layer.method !== "post") continue;
    if (handlers.has(layer.handle as object)) return "handler";
    if (PARSERS.has(layer.name)) return `${layer.name} (${layer.name.replace("Parser", "")} body parser)`;
  }
  return undefined;
}
