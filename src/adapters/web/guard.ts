import { answerError } from "../../errors.js";
import type { InlineGuard, InlineTicket } from "../../edge/inline/types.js";
import { createLogger, type Logger } from "../../log.js";
import { bodyParsedAnswer, logBodyParsed, recordChunks } from "../../edge/parsed-body.js";
import { toResponse, webBodyState, webChunks } from "./io.js";
import { sourceFromPath } from "../../edge/route.js";

/**
 * The app's existing Web-standard webhook handler. `request` carries the same raw bytes the guard verified (its
 * body can be read again, even verified again); `ticket.event.payload` is the parsed, verified event.
 *
 * @example
 * const handler: FetchGuardedHandler = async (request, ticket) => {
 *   await fulfilOrder(ticket.event.payload);
 *   return new Response(null, { status: 204 });
 * };
 */
export type FetchGuardedHandler = (request: Request, ticket: InlineTicket) => Promise<Response>;

/**
 * Options of {@link createFetchGuard}.
 *
 * @example
 * const options: FetchGuardOptions = { source: "stripe", log };
 */
export interface FetchGuardOptions {
  /**
   * The source every request of this route belongs to (a retrofit keeps its URL). Unset: the path segment after
   * `basePath` names it.
   * @example createFetchGuard(guard, handler, { source: "stripe" })
   */
  readonly source?: string;
  /**
   * Used when `source` is unset: requests go to `{basePath}/:source`.
   * @defaultValue "/webhooks"
   * @example createFetchGuard(guard, handler, { basePath: "/api/webhooks" })
   */
  readonly basePath?: string;
  /**
   * Where a body read before the guard, and handler errors, are reported (pass the guard's logger).
   * @defaultValue createLogger()
   * @example createFetchGuard(guard, handler, { source: "stripe", log })
   */
  readonly log?: Logger;
}

/**
 * The inline guard (docs/architecture.md §7) around a Web-standard handler: Next.js App Router routes, Hono
 * (`(c) => guarded(c.req.raw)`), Bun, Deno. It verifies and claims, then calls the handler; refusals, and duplicates
 * in `enforce` mode, are answered without it. The event settles when the handler's Response has a status below
 * 400, and fails (the provider's next delivery runs it again) when the status is 400 or more or the handler throws;
 * a throw is answered 500 with an empty body, after the failure is recorded. A streamed Response settles when the
 * handler returns it, not when the stream ends.
 *
 * @example
 * const guard = createInlineGuard({ sources, db: pool, ledger: ledgerContext(), log });
 * export const POST = createFetchGuard(guard, existingHandler, { source: "stripe", log }); // app/api/stripe/route.ts
 */
export function createFetchGuard(
  guard: InlineGuard,
  handler: FetchGuardedHandler,
  options: FetchGuardOptions = {},
): (request: Request) => Promise<Response> {
  const basePath = options.basePath ?? "/webhooks";
  const log = options.log ?? createLogger();
  return async (request) => {
    const source = options.source ?? sourceFromPath(new URL(request.url).pathname, basePath);
    if (source === undefined) return toResponse(answerError("not_found"));
    const state = await webBodyState(request);
    if (state.kind === "parsed") {
      logBodyParsed(log, "fetch", { source, parsedAs: state.parsedAs });
      return toResponse(bodyParsedAnswer("fetch"));
    }
    const tape = request.body ? recordChunks(webChunks(request.body)) : undefined;
    const admission = await guard.admit({
      method: request.method,
      source,
      headers: request.headers,
      body: tape?.chunks ?? null,
    });
    if (!admission.proceed) return toResponse(admission.answer);
    const { ticket } = admission;
    const replayed = new Request(request.url, {
      method: request.method,
      headers: request.headers,
      // Buffer.concat allocates plain (never shared) ArrayBuffers.
      body: tape ? (tape.bytes() as Uint8Array<ArrayBuffer>) : null,
      signal: request.signal,
    });
    let response: Response;
    try {
      response = await handler(replayed, ticket);
    } catch (error) {
      await ticket.fail(error);
      log.error(
        { source, eventId: ticket.event.dedupeKey, err: (error as Error).message },
        "inline handler threw",
      );
      return toResponse(answerError("internal"));
    }
    if (response.status < 400) await ticket.settle();
    else await ticket.fail(new Error(`the handler answered ${response.status}`));
    return response;
  };
}
