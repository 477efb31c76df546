import type { IncomingMessage, ServerResponse } from "node:http";
import { type Answer, answerError } from "../../errors.js";
import type { Receiver } from "../../edge/receiver.js";
import { receiveNode, writeAnswer } from "./io.js";
import { pathOf, type Route, routeMatcher } from "../../edge/route.js";

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
 * The node:http adapter: `(req, res) => Promise<void>`. It reads the raw body itself. The promise never rejects
 * and resolves once the answer is written, so a Next.js pages API route can return it.
 *
 * @example
 * http.createServer(createNodeHandler(receiver)).listen(3000);
 */
export function createNodeHandler(receiver: Receiver, options: NodeHandlerOptions = {}) {
  const routeOf = routeMatcher(options.basePath ?? "/webhooks", options.replayPath ?? "/replay");
  return (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const route = routeOf(pathOf(req.url));
    return answerFor(receiver, req, route).then(
      (answer) => writeAnswer(req, res, answer),
      (error: Error) => {
        receiver.log.error({ source: route?.source, err: error.message }, "the node adapter failed");
        if (!res.headersSent) res.writeHead(500).end();
      },
    );
  };
}

function answerFor(receiver: Receiver, req: IncomingMessage, route: Route): Promise<Answer> {
  if (route === undefined) return Promise.resolve(answerError("not_found"));
  // A framework (Next.js pages API, Connect) may have parsed the body before this handler ran.
  return receiveNode(receiver, receiver.log, "node", req, route.source, route.viaReplay);
}
