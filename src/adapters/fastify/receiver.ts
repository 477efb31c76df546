import type { Readable } from "node:stream";
import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from "fastify";
import { type Answer, answerError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { Receiver } from "../../edge/receiver.js";
import { nodeHeaders } from "../node/io.js";
import { bodyParsedAnswer, logBodyParsed } from "../../edge/parsed-body.js";

/**
 * Options of {@link createFastifyHandler}.
 *
 * @example
 * const options: FastifyHandlerOptions = { basePath: "/webhooks", log };
 */
export interface FastifyHandlerOptions {
  /**
   * The path deliveries arrive under: the plugin answers `{basePath}/:source`. Fastify's own `register(…, { prefix })`
   * is prepended as usual.
   * @defaultValue "/webhooks"
   * @example app.register(createFastifyHandler(receiver, { basePath: "/hooks" })) // POST /hooks/:source
   */
  readonly basePath?: string;
  /**
   * Where a body read before the plugin is reported (pass the receiver's logger).
   * @defaultValue the receiver's logger
   * @example createFastifyHandler(receiver, { log })
   */
  readonly log?: Logger;
}

/**
 * The Fastify adapter (Fastify 4 and 5): a plugin answering every method on `{basePath}/:source` (so other methods
 * get hookledger's 405). Inside its encapsulation context it replaces every content-type parser with one that
 * hands over the raw request stream, so the app's JSON parser never touches a delivery, Fastify's `bodyLimit`
 * does not apply (the source's cap answers 413, from Content-Length or at the crossing byte) and no content type is
 * refused with Fastify's 415. Register it as is: wrapping it in `fastify-plugin` would leak that parser to the app.
 *
 * @example
 * const app = Fastify();
 * await app.register(createFastifyHandler(receiver, { log })); // POST /webhooks/:source
 * app.post("/orders", async (request) => request.body); // the app's routes keep their JSON parser
 */
export function createFastifyHandler(
  receiver: Receiver,
  options: FastifyHandlerOptions = {},
): FastifyPluginAsync {
  const basePath = (options.basePath ?? "/webhooks").replace(/\/+$/, "");
  const log = options.log ?? receiver.log;
  return async function hookledger(instance: FastifyInstance) {
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    instance.all(`${basePath}/:source`, async (request, reply) => {
      const answer = await answerFor(receiver, log, request);
      if (!request.raw.complete) reply.header("connection", "close");
      return reply
        .code(answer.status)
        .headers(answer.headers)
        .send(answer.body === "" ? undefined : answer.body);
    });
  };
}

async function answerFor(receiver: Receiver, log: Logger, request: FastifyRequest): Promise<Answer> {
  const { source } = request.params as { source: string };
  // The parser above passed the payload stream on; without a body Fastify skips parsers and leaves it unread.
  const stream = (request.body ?? request.raw) as Readable;
  if (
    request.method === "POST" &&
    stream === request.raw &&
    (stream.readableDidRead || stream.readableEnded)
  ) {
    logBodyParsed(log, "fastify", { source, parsedAs: "a stream read elsewhere" });
    return bodyParsedAnswer("fastify");
  }
  try {
    return await receiver.receive({
      method: request.method,
      source,
      headers: nodeHeaders(request.raw),
      // As in the node adapter: an early stop (413) keeps the socket to carry the answer; `connection: close`
      // then ends it instead of reading the rest.
      body: stream.iterator({ destroyOnReturn: false }),
      ...(request.raw.socket.remoteAddress !== undefined && {
        clientAddress: request.raw.socket.remoteAddress,
      }),
    });
  } catch (error) {
    log.error({ source, err: (error as Error).message }, "the fastify adapter failed");
    return answerError("internal");
  }
}
