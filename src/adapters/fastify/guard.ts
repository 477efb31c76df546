import { pipeline, Readable, Transform, type TransformCallback } from "node:stream";
import type {
  FastifyReply,
  FastifyRequest,
  onErrorAsyncHookHandler,
  preHandlerAsyncHookHandler,
  preParsingAsyncHookHandler,
} from "fastify";
import { type Answer, answerError } from "../../errors.js";
import type { InlineGuard, InlineTicket } from "../../edge/inline/types.js";
import { createLogger, type Logger } from "../../log.js";
import { nodeHeaders } from "../node/io.js";

/**
 * Options of {@link createFastifyGuard}.
 *
 * @example
 * const options: FastifyGuardOptions = { source: "stripe", log };
 */
export interface FastifyGuardOptions {
  /**
   * The source every request of this route belongs to (a retrofit keeps its URL). Unset: the route's `:source`.
   * @example createFastifyGuard(guard, { source: "stripe" })
   */
  readonly source?: string;
  /**
   * Where misuse and ledger errors are reported (pass the guard's logger).
   * @defaultValue createLogger()
   * @example createFastifyGuard(guard, { source: "stripe", log })
   */
  readonly log?: Logger;
}

/**
 * The route hooks {@link createFastifyGuard} returns; spread them into the route's options.
 *
 * @example
 * const hooks: FastifyGuardHooks = createFastifyGuard(guard, { source: "stripe" });
 * app.post("/stripe/webhook", { ...hooks }, existingHandler);
 */
export interface FastifyGuardHooks {
  readonly preParsing: preParsingAsyncHookHandler;
  readonly preHandler: preHandlerAsyncHookHandler;
  readonly onError: onErrorAsyncHookHandler;
}

const tickets = new WeakMap<FastifyRequest, InlineTicket>();

/**
 * The inline guard (docs/architecture.md §7) as route hooks for an existing Fastify webhook route. The route keeps its own
 * body parser (`request.body` is what it was before the retrofit); `preParsing` records the raw bytes as that
 * parser reads them, and `preHandler` verifies them and claims the event before the handler runs. Refusals, and
 * duplicates in `enforce` mode, are answered without the handler. When the response closes the event settles if it
 * was sent with a status below 400, and fails otherwise, with the handler's error when there was one. A parser that
 * passes the payload stream on is supported too: the guard reads it, and `request.body` becomes a stream of the
 * same bytes.
 *
 * @example
 * const guard = createInlineGuard({ sources, db: pool, ledger: ledgerContext(), log });
 * app.post("/stripe/webhook", { ...createFastifyGuard(guard, { source: "stripe", log }) }, existingHandler);
 */
export function createFastifyGuard(guard: InlineGuard, options: FastifyGuardOptions = {}): FastifyGuardHooks {
  const log = options.log ?? createLogger();
  const tapes = new WeakMap<FastifyRequest, Tape>();
  const errors = new WeakMap<FastifyRequest, Error>();
  return {
    async preParsing(request, _reply, payload) {
      const tape = new Tape();
      tapes.set(request, tape);
      return pipeline(payload, tape, () => {});
    },
    async preHandler(request, reply) {
      const { source: param } = (request.params ?? {}) as { source?: unknown };
      const source = options.source ?? (typeof param === "string" ? param : undefined);
      const tape = tapes.get(request);
      // A parser that passes the stream on leaves it unread: the guard reads it, the handler gets a fresh stream.
      const passedOn = tape !== undefined && request.body === tape && !tape.readableDidRead;
      if (source === undefined || (tape && !tape.ended && !passedOn)) {
        log.error(
          { source, path: request.url },
          source === undefined
            ? "createFastifyGuard needs { source } or a :source route parameter"
            : "the route's body parser read part of the body and kept the rest, so it cannot be verified; give " +
                "the route a parser that reads it all (the default JSON parser, or parseAs: 'buffer')",
        );
        return send(request, reply, answerError(source === undefined ? "not_found" : "internal"));
      }
      const admission = await guard.admit({
        method: request.method,
        source,
        headers: nodeHeaders(request.raw),
        body: passedOn ? tape.iterator({ destroyOnReturn: false }) : once(tape?.bytes() ?? new Uint8Array(0)),
      });
      if (passedOn) request.body = Readable.from([tape.bytes()]);
      if (!admission.proceed) return send(request, reply, admission.answer);
      const { ticket } = admission;
      tickets.set(request, ticket);
      reply.raw.once("close", () => {
        const sent = reply.raw.writableFinished;
        const status = reply.raw.statusCode;
        const ending =
          sent && status < 400
            ? ticket.settle()
            : ticket.fail(
                errors.get(request) ??
                  new Error(
                    sent ? `the handler answered ${status}` : "the response was closed before it was sent",
                  ),
              );
        ending.catch((error: Error) =>
          log.error({ source, err: error.message }, "the inline ticket could not end"),
        );
      });
    },
    async onError(request, _reply, error) {
      errors.set(request, error);
    },
  };
}

/**
 * The ticket {@link createFastifyGuard} admitted for this request: the verified event, and whether it is a
 * shadow-mode duplicate.
 *
 * @example
 * app.post("/stripe/webhook", { ...hooks }, async (request) => {
 *   const ticket = inlineTicket(request);
 *   if (ticket?.wouldSkip) request.log.info("would skip: duplicate");
 * });
 */
export function inlineTicket(request: FastifyRequest): InlineTicket | undefined {
  return tickets.get(request);
}

function send(request: FastifyRequest, reply: FastifyReply, answer: Answer): FastifyReply {
  if (!request.raw.complete) reply.header("connection", "close");
  return reply
    .code(answer.status)
    .headers(answer.headers)
    .send(answer.body === "" ? undefined : answer.body);
}

/** Passes the body through to the route's parser and keeps a copy of the bytes. */
class Tape extends Transform {
  readonly #chunks: Buffer[] = [];
  ended = false;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#chunks.push(chunk);
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    this.ended = true;
    done();
  }

  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
