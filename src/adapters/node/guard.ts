import type { IncomingMessage, ServerResponse } from "node:http";
import { answerError } from "../../errors.js";
import type { InlineGuard, InlineTicket } from "../../edge/inline/types.js";
import { createLogger, type Logger } from "../../log.js";
import { bodyParsedAnswer, logBodyParsed, recordChunks } from "../../edge/parsed-body.js";
import { nodeBody, nodeBodyState, nodeHeaders, responseSent, writeAnswer } from "./io.js";
import { sourceFromPath } from "../../edge/route.js";

/**
 * The app's existing node:http webhook handler. The guard has read the raw body (the request stream is consumed):
 * the verified, parsed body is `ticket.event.payload`, and `req.body` (see {@link NodeGuardOptions.body}).
 *
 * @example
 * const handler: NodeGuardedHandler = async (req, res, ticket) => {
 *   await fulfilOrder(ticket.event.payload);
 *   res.writeHead(200).end();
 * };
 */
export type NodeGuardedHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  ticket: InlineTicket,
) => Promise<void> | void;

/**
 * Options of {@link createNodeGuard}.
 *
 * @example
 * createNodeGuard(guard, handler, { source: "stripe", body: "raw", log });
 */
export interface NodeGuardOptions {
  /**
   * The source every request of this route belongs to (a retrofit keeps its existing URL). Unset: the path
   * segment after `basePath` names it.
   * @example "stripe"
   */
  readonly source?: string;
  /**
   * Used when `source` is unset: requests go to `{basePath}/:source`.
   * @defaultValue "/webhooks"
   */
  readonly basePath?: string;
  /**
   * What the handler finds in `req.body`: the verified, parsed payload (what a Next.js API route's body parser
   * gave it) or the raw bytes as a `Buffer` (for handlers that still call `stripe.webhooks.constructEvent`).
   * @defaultValue "raw" when a raw body was left in `req.body` before the guard, else "payload"
   */
  readonly body?: "payload" | "raw";
  /**
   * Where a body parser that ran first is reported (pass the guard's logger).
   * @defaultValue createLogger()
   */
  readonly log?: Logger;
}

/**
 * Puts the inline guard in front of an existing node:http handler: verify and claim, then call the handler. The
 * event settles when the handler has resolved and its response has been sent with a status below 400. It fails
 * (and the provider's next delivery runs it again) when the handler throws, answers 400 or more, or the response
 * never completes; a handler that threw before answering is answered 500 with an empty body, after the failure is
 * recorded, so an immediate retry already finds the lease released.
 *
 * @example
 * const guard = createInlineGuard({ sources, db: pool, ledger: ledgerContext(), log });
 * http.createServer(createNodeGuard(guard, existingHandler, { source: "stripe" })).listen(3000);
 */
export function createNodeGuard(
  guard: InlineGuard,
  handler: NodeGuardedHandler,
  options: NodeGuardOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  const basePath = options.basePath ?? "/webhooks";
  const log = options.log ?? createLogger();
  return (req, res) => {
    const source = options.source ?? sourceFromPath((req.url ?? "/").split("?")[0] ?? "/", basePath);
    guarded(guard, handler, options, log, req, res, source).catch((error: Error) => {
      log.error({ source, err: error.message }, "the inline guard failed");
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  };
}

async function guarded(
  guard: InlineGuard,
  handler: NodeGuardedHandler,
  options: NodeGuardOptions,
  log: Logger,
  req: IncomingMessage & { body?: unknown },
  res: ServerResponse,
  source: string | undefined,
): Promise<void> {
  if (source === undefined) return writeAnswer(req, res, answerError("not_found"));
  // A Next.js API route parses the body unless told not to; its signature can then no longer be checked.
  const state = nodeBodyState(req);
  if (state.kind === "parsed") {
    logBodyParsed(log, "node", { source, parsedAs: state.parsedAs });
    return writeAnswer(req, res, bodyParsedAnswer("node"));
  }
  const tape = state.kind === "raw" ? undefined : recordChunks(nodeBody(req, state));
  const admission = await guard.admit({
    method: req.method ?? "GET",
    source,
    headers: nodeHeaders(req),
    body: tape ? tape.chunks : nodeBody(req, state),
  });
  if (!admission.proceed) return writeAnswer(req, res, admission.answer);
  const { ticket } = admission;
  const shape = options.body ?? (state.kind === "raw" ? "raw" : "payload");
  if (shape === "payload") req.body = ticket.event.payload;
  else req.body = state.kind === "raw" ? Buffer.from(state.bytes) : (tape?.bytes() ?? Buffer.alloc(0));
  try {
    await handler(req, res, ticket);
  } catch (error) {
    await ticket.fail(error);
    if (!res.headersSent) res.writeHead(500).end();
    // Half an answer must not read as a success to the provider: cut it off so it retries.
    else if (!res.writableEnded) res.destroy();
    return;
  }
  // Callback-style handlers answer after they return; the verdict is the response actually sent.
  if (!(await responseSent(res))) {
    await ticket.fail(new Error("the response was closed before it was sent"));
  } else if (res.statusCode >= 400) {
    await ticket.fail(new Error(`the handler answered ${res.statusCode}`));
  } else {
    await ticket.settle();
  }
}
