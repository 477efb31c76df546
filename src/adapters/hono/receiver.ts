import { receiveWeb } from "../web/io.js";
import type { Context } from "hono";
import { type Answer, answerError } from "../../errors.js";
import type { Logger } from "../../log.js";
import type { Receiver } from "../../edge/receiver.js";
import { toResponse } from "../web/io.js";
import { sourceFromPath } from "../../edge/route.js";

/**
 * Options of {@link createHonoHandler}.
 *
 * @example
 * const options: HonoHandlerOptions = { basePath: "/webhooks", log };
 */
export interface HonoHandlerOptions {
  /**
   * Where deliveries arrive when the route has no `:source` parameter; the next path segment names the source.
   * @defaultValue "/webhooks"
   * @example createHonoHandler(receiver, { basePath: "/api/hooks" })
   */
  readonly basePath?: string;
  /**
   * Where a body read by earlier middleware is reported (pass the receiver's logger).
   * @defaultValue the receiver's logger
   * @example createHonoHandler(receiver, { log })
   */
  readonly log?: Logger;
}

/**
 * The Hono adapter, on any runtime Hono runs on (Node through `@hono/node-server`, Bun, Deno, Workers). Over
 * `createFetchHandler` it adds two things: the source comes from the route's `:source` parameter wherever the app
 * mounts it, and a body that middleware already read is caught. Bytes kept by `c.req.arrayBuffer()` are exact and
 * accepted; a body read as text or JSON (a validator, a logger) is answered 500 with the cause and the fix, because
 * Hono would re-serialise it and every signature would fail.
 *
 * @example
 * const app = new Hono();
 * app.all("/webhooks/:source", createHonoHandler(receiver, { log })); // app.all: other methods get the 405
 * serve({ fetch: app.fetch, port: 3000 });
 */
export function createHonoHandler(receiver: Receiver, options: HonoHandlerOptions = {}) {
  const basePath = options.basePath ?? "/webhooks";
  const log = options.log ?? receiver.log;
  return async (c: Context): Promise<Response> => {
    const answer = await answerFor(receiver, log, c, basePath).catch((error: Error): Answer => {
      log.error({ err: error.message }, "the hono adapter failed");
      return answerError("internal");
    });
    return toResponse(answer);
  };
}

async function answerFor(receiver: Receiver, log: Logger, c: Context, basePath: string): Promise<Answer> {
  const source = c.req.param("source") ?? sourceFromPath(c.req.path, basePath);
  if (source === undefined) return answerError("not_found");
  return receiveWeb(receiver, log, "hono", c.req.raw, source, { cached: c.req.bodyCache });
}
