import { receiveWeb, toResponse } from "./io.js";
import { type Answer, answerError } from "../../errors.js";
import type { Receiver } from "../../edge/receiver.js";
import { routeFromPath } from "../../edge/route.js";

/** Options of {@link createFetchHandler}. */
export interface FetchHandlerOptions {
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
 * The Web-standard adapter: `(Request) => Promise<Response>`, for Hono, Next.js App Router routes, Bun and Deno.
 * It reads the body itself; mount no body parser in front of it.
 *
 * @example
 * const handle = createFetchHandler(receiver);
 * export const POST = (request: Request) => handle(request); // app/webhooks/[source]/route.ts
 */
export function createFetchHandler(receiver: Receiver, options: FetchHandlerOptions = {}) {
  const basePath = options.basePath ?? "/webhooks";
  const replayPath = options.replayPath ?? "/replay";
  return async (request: Request): Promise<Response> => {
    const route = routeFromPath(new URL(request.url).pathname, basePath, replayPath);
    const answer =
      route === undefined
        ? answerError("not_found")
        : await answerFor(receiver, request, route.source, route.viaReplay);
    return toResponse(answer);
  };
}

async function answerFor(
  receiver: Receiver,
  request: Request,
  source: string,
  viaReplay: boolean,
): Promise<Answer> {
  return receiveWeb(receiver, receiver.log, "fetch", request, source, { viaReplay });
}
