import type { Request, RequestHandler, Response } from "express";
import { answerError } from "../../errors.js";
import type { InlineGuard, InlineTicket } from "../../edge/inline/types.js";
import { createLogger, type Logger } from "../../log.js";
import { bodyParsedAnswer, logBodyParsed, recordChunks } from "../../edge/parsed-body.js";
import { nodeBody, nodeBodyState, nodeHeaders, writeAnswer } from "../node/io.js";

/**
 * Options of {@link createExpressGuard}.
 *
 * @example
 * const options: ExpressGuardOptions = { source: "stripe", body: "payload", log };
 */
export interface ExpressGuardOptions {
  /**
   * The source every request of this route belongs to (a retrofit keeps its URL). Unset: the route's `:source`.
   * @example createExpressGuard(guard, { source: "stripe" })
   */
  readonly source?: string;
  /**
   * What the existing handler finds in `req.body`: the verified, parsed payload (what `express.json()` gave it) or
   * the raw bytes as a `Buffer` (what `express.raw()` gave it, for handlers that still call
   * `stripe.webhooks.constructEvent`).
   * @defaultValue "raw" when `express.raw()` ran before the guard, else "payload"
   * @example createExpressGuard(guard, { source: "stripe", body: "raw" })
   */
  readonly body?: "payload" | "raw";
  /**
   * Where a body parser that ran first, and ledger errors, are reported (pass the guard's logger).
   * @defaultValue createLogger()
   * @example createExpressGuard(guard, { source: "stripe", log })
   */
  readonly log?: Logger;
}

/**
 * The inline guard (docs/architecture.md §7) as Express middleware, placed before an existing webhook handler: it verifies
 * over the raw bytes and claims the event, then calls `next()` with `req.body` set (see
 * {@link ExpressGuardOptions.body}) and the ticket in `res.locals.hookledger`. Refusals, and duplicates in
 * `enforce` mode, are answered here without the handler. When the response closes the event settles if it was
 * sent with a status below 400, and fails otherwise (the provider's next delivery then runs it again); an error
 * middleware may call `res.locals.hookledger.fail(error)` first to record the real cause.
 *
 * @example
 * const guard = createInlineGuard({ sources, db: pool, ledger: ledgerContext(), log });
 * app.post("/stripe/webhook", createExpressGuard(guard, { source: "stripe", log }), existingHandler);
 */
export function createExpressGuard(guard: InlineGuard, options: ExpressGuardOptions = {}): RequestHandler {
  const log = options.log ?? createLogger();
  return (req, res, next) => {
    admit(guard, options, log, req, res).then(
      (ticket) => {
        if (ticket) next();
      },
      (error: Error) => {
        log.error({ source: options.source, err: error.message }, "the inline guard failed");
        writeAnswer(req, res, answerError("internal"));
      },
    );
  };
}

async function admit(
  guard: InlineGuard,
  options: ExpressGuardOptions,
  log: Logger,
  req: Request,
  res: Response,
): Promise<InlineTicket | undefined> {
  const param: unknown = req.params?.source;
  const source = options.source ?? (typeof param === "string" ? param : undefined);
  if (source === undefined) {
    log.error({ path: req.originalUrl }, "createExpressGuard needs { source } or a :source route parameter");
    return void writeAnswer(req, res, answerError("not_found"));
  }
  const state = nodeBodyState(req);
  if (state.kind === "parsed") {
    logBodyParsed(log, "express", { source, parsedAs: state.parsedAs });
    return void writeAnswer(req, res, bodyParsedAnswer("express"));
  }
  const tape = state.kind === "raw" ? undefined : recordChunks(nodeBody(req, state));
  const admission = await guard.admit({
    method: req.method,
    source,
    headers: nodeHeaders(req),
    body: tape ? tape.chunks : nodeBody(req, state),
  });
  if (!admission.proceed) return void writeAnswer(req, res, admission.answer);

  const ticket = endsOnce(admission.ticket);
  const raw = state.kind === "raw" ? Buffer.from(state.bytes) : (tape?.bytes() ?? Buffer.alloc(0));
  const shape = options.body ?? (state.kind === "raw" ? "raw" : "payload");
  // Later body parsers in the chain skip a request whose stream has ended, so this value is what handlers see.
  req.body = shape === "raw" ? raw : ticket.event.payload;
  res.locals.hookledger = ticket;
  res.once("close", () => {
    const sent = res.writableFinished;
    const ending =
      sent && res.statusCode < 400
        ? ticket.settle()
        : ticket.fail(
            new Error(
              sent ? `the handler answered ${res.statusCode}` : "the response was closed before it was sent",
            ),
          );
    ending.catch((error: Error) =>
      log.error({ source, err: error.message }, "the inline ticket could not end"),
    );
  });
  return ticket;
}

/** The first of `settle`/`fail` wins, so an error middleware's `fail(error)` is not overwritten at close. */
function endsOnce(ticket: InlineTicket): InlineTicket {
  let ending: Promise<void> | undefined;
  return {
    source: ticket.source,
    event: ticket.event,
    wouldSkip: ticket.wouldSkip,
    settle: () => {
      ending ??= ticket.settle();
      return ending;
    },
    fail: (error) => {
      ending ??= ticket.fail(error);
      return ending;
    },
  };
}
