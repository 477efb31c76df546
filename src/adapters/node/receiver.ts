import type { IncomingMessage, ServerResponse } from "node:http";
import { type Answer, answerError } from "../../errors.js";
import type { HeaderBag } from "../../providers/types.js";
import type { Receiver } from "../../edge/receiver.js";
import { bodyParsedAnswer, logBodyParsed, nodeBodyState } from "../../edge/parsed-body.js";
import { routeFromPath } from "../../edge/route.js";

/** Options of {@link createNodeHandler}. */
export interface NodeHandlerOptions {
  /**
   * The path deliveries arrive under; the next segment names the source.
   * @defaultValue "/webhooks"
   */
  readonly basePath?: string;
  /**
   * The path re-POSTs arrive under (`hookledger replay … --via`): the replay token replaces the signature there,
   * and a receiver without a token refuses them all.
   * @defaultValue "/replay"
   */
  readonly replayPath?: string;
}

/**
 * The node:http adapter: `(req, res) => void`. It reads the raw body itself.
 *
 * @example
 * http.createServer(createNodeHandler(receiver)).listen(3000);
 */
export function createNodeHandler(receiver: Receiver, options: NodeHandlerOptions = {}) {
  const basePath = options.basePath ?? "/webhooks";
  const replayPath = options.replayPath ?? "/replay";
  return (req: IncomingMessage, res: ServerResponse): void => {
    const route = routeFromPath((req.url ?? "/").split("?")[0] ?? "/", basePath, replayPath);
    const answering = answerFor(receiver, req, route);
    answering.then(
      (answer) => {
        const headers: Record<string, string> = { ...answer.headers };
        if (!req.complete) headers.connection = "close";
        res.writeHead(answer.status, headers).end(answer.body);
      },
      () => {
        res.writeHead(500).end();
      },
    );
  };
}

function answerFor(
  receiver: Receiver,
  req: IncomingMessage,
  route: ReturnType<typeof routeFromPath>,
): Promise<Answer> {
  if (route === undefined) return Promise.resolve(answerError("not_found"));
  const { source } = route;
  // A framework (Next.js pages API, Connect) may have parsed the body before this handler ran.
  const state = nodeBodyState(req);
  if (state.kind === "parsed" && req.method === "POST") {
    logBodyParsed(receiver.log, "node", { source, parsedAs: state.parsedAs });
    return Promise.resolve(bodyParsedAnswer("node"));
  }
  return receiver.receive({
    method: req.method ?? "GET",
    source,
    headers: nodeHeaders(req),
    // Without destroyOnReturn an early stop (413) leaves the socket alive to carry the answer; the
    // `connection: close` below then ends it instead of reading the rest.
    body: state.kind === "raw" ? [state.bytes] : req.iterator({ destroyOnReturn: false }),
    ...(route.viaReplay && { viaReplay: true }),
  });
}

/**
 * Wraps node's header object as a {@link HeaderBag}.
 *
 * @example
 * const headers = nodeHeaders(req); headers.get("stripe-signature");
 */
export function nodeHeaders(req: IncomingMessage): HeaderBag {
  return {
    get(name) {
      const value = req.headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(", ") : value;
    },
    forEach(callback) {
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) callback(Array.isArray(value) ? value.join(", ") : value, name);
      }
    },
  };
}
