import type { Context, MiddlewareHandler } from "hono";
import { answerError } from "../../errors.js";
import type { InlineGuard, InlineTicket } from "../../edge/inline/types.js";
import { createLogger, type Logger } from "../../log.js";
import { bodyParsedAnswer, logBodyParsed, recordChunks } from "../../edge/parsed-body.js";
import { toResponse, webBodyState, webChunks } from "../web/io.js";

/**
 * Options of {@link createHonoGuard}.
 *
 * @example
 * const options: HonoGuardOptions = { source: "stripe", log };
 */
export interface HonoGuardOptions {
  /**
   * The source every request of this route belongs to (a retrofit keeps its URL). Unset: the route's `:source`.
   * @example createHonoGuard(guard, { source: "stripe" })
   */
  readonly source?: string;
  /**
   * Where a body read before the guard, misuse and handler errors are reported (pass the guard's logger).
   * @defaultValue createLogger()
   * @example createHonoGuard(guard, { source: "stripe", log })
   */
  readonly log?: Logger;
}

/**
 * The Hono environment {@link createHonoGuard} adds to the routes it guards: `c.get("hookledger")` is the ticket
 * of the verified, claimed event.
 *
 * @example
 * const app = new Hono<HonoGuardEnv>();
 * app.post("/stripe", createHonoGuard(guard, { source: "stripe" }), (c) => c.json(c.get("hookledger").event.payload));
 */
export interface HonoGuardEnv {
  Variables: { hookledger: InlineTicket };
}

/**
 * The inline guard (docs/architecture.md §7) as Hono middleware, placed before an existing webhook handler. It verifies over
 * the raw bytes and claims the event, then calls the handler with the same bytes still readable
 * (`c.req.json()`, `c.req.text()`, `c.req.arrayBuffer()`, and `c.req.raw`, a Request carrying them) and the ticket
 * in `c.get("hookledger")`. Refusals, and duplicates in `enforce` mode, are answered without the handler. The
 * event settles when the handler's response has a status below 400, and fails (the provider's next delivery runs it
 * again) when the status is 400 or more or the handler threw (Hono's `c.error`); the app's `onError` still answers
 * a throw. A streamed response settles when the handler returns it, not when the stream ends.
 *
 * @example
 * const guard = createInlineGuard({ sources, db: pool, ledger: ledgerContext(), log });
 * app.post("/stripe/webhook", createHonoGuard(guard, { source: "stripe", log }), existingHandler);
 */
export function createHonoGuard(
  guard: InlineGuard,
  options: HonoGuardOptions = {},
): MiddlewareHandler<HonoGuardEnv> {
  const log = options.log ?? createLogger();
  return async (c, next) => {
    const source = options.source ?? c.req.param("source");
    if (source === undefined) {
      log.error({ path: c.req.path }, "createHonoGuard needs { source } or a :source route parameter");
      return toResponse(answerError("not_found"));
    }
    const ticket = await admit(guard, log, c, source).catch((error: Error) => {
      log.error({ source, err: error.message }, "the inline guard failed");
      return toResponse(answerError("internal"));
    });
    if (ticket instanceof Response) return ticket;
    c.set("hookledger", ticket);
    await next();
    // Hono's compose catches a handler's throw, answers it through onError and leaves the cause in c.error.
    if (c.error) {
      log.error({ source, eventId: ticket.event.dedupeKey, err: c.error.message }, "inline handler threw");
      await ticket.fail(c.error);
    } else if (c.res.status >= 400) await ticket.fail(new Error(`the handler answered ${c.res.status}`));
    else await ticket.settle();
  };
}

async function admit(
  guard: InlineGuard,
  log: Logger,
  c: Context,
  source: string,
): Promise<InlineTicket | Response> {
  const request = c.req.raw;
  const state = await webBodyState(request, c.req.bodyCache);
  if (state.kind === "parsed") {
    logBodyParsed(log, "hono", { source, parsedAs: state.parsedAs });
    return toResponse(bodyParsedAnswer("hono"));
  }
  const tape = state.kind === "unread" && request.body ? recordChunks(webChunks(request.body)) : undefined;
  const admission = await guard.admit({
    method: request.method,
    source,
    headers: request.headers,
    body: state.kind === "raw" ? [state.bytes] : (tape?.chunks ?? null),
  });
  if (!admission.proceed) return toResponse(admission.answer);
  // A copy of exactly the body: a Buffer's own ArrayBuffer may be a pool slab shared with other buffers.
  const bytes = new Uint8Array(state.kind === "raw" ? state.bytes : (tape?.bytes() ?? []));
  // HonoRequest's readers derive json/text/blob from any cached body, and the handler may read c.req.raw itself.
  c.req.bodyCache = { arrayBuffer: Promise.resolve(bytes.buffer) as unknown as ArrayBuffer };
  c.req.raw = new Request(request.url, {
    method: request.method,
    headers: request.headers,
    body: bytes.byteLength > 0 ? bytes : null,
    signal: request.signal,
  });
  return admission.ticket;
}
