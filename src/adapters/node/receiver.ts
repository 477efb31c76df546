import type { IncomingMessage, ServerResponse } from "node:http";
import { type Answer, answerError } from "../../errors.js";
import type { Receiver } from "../../edge/receiver.js";
import { bodyParsedAnswer, logBodyParsed } from "../../edge/parsed-body.js";
import { nodeBody, nodeBodyState, nodeHeaders, writeAnswer } from "./io.js";
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
      (answer) => writeAnswer(req, res, answer),
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
    body: nodeBody(req, state),
    ...(route.viaReplay && { viaReplay: true }),
  });
}
