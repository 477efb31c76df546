import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type BodyParserHost,
  type BodyState,
  bodyParsedAnswer,
  logBodyParsed,
} from "../../edge/parsed-body.js";
import type { Receiver } from "../../edge/receiver.js";
import type { Logger } from "../../log.js";
import type { Answer } from "../../errors.js";
import type { HeaderBag } from "../../providers/types.js";

// The node:http request and response helpers every node-based adapter (node, Express, Fastify) shares.

/**
 * Wraps node's header object as a {@link HeaderBag}.
 *
 * @example
 * const headers = nodeHeaders(req); headers.get("stripe-signature");
 */
export function nodeHeaders(req: IncomingMessage): HeaderBag {
  return {
    get(name) {
      const value = req.headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(", ") : value;
    },
    forEach(callback) {
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) callback(Array.isArray(value) ? value.join(", ") : value, name);
      }
    },
  };
}

/**
 * Where an IncomingMessage's body stands. The stream is the truth: while nothing has read it, it is read whatever
 * `req.body` holds (body-parser 1.x sets `{}` on requests it skips). Once read, only a byte buffer left in
 * `req.body` is usable.
 *
 * @example
 * const state = nodeBodyState(req);
 * if (state.kind === "parsed") return send(bodyParsedAnswer("express"));
 */
export function nodeBodyState(req: IncomingMessage & { body?: unknown }): BodyState {
  if (!req.readableDidRead && !req.readableEnded) return { kind: "unread" };
  const { body } = req;
  if (body instanceof Uint8Array) return { kind: "raw", bytes: body };
  return { kind: "parsed", parsedAs: describe(body) };
}

function describe(body: unknown): string {
  if (body === undefined) return "a stream read elsewhere";
  if (body === null) return "null";
  return typeof body === "string" ? "a string" : `an ${typeof body}`;
}

/**
 * The body's chunks: the bytes a raw parser kept, else the request stream. Without destroyOnReturn an early stop
 * (413) leaves the socket alive to carry the answer; {@link writeAnswer}'s `connection: close` then ends it instead
 * of reading the rest.
 *
 * @example
 * await receiver.receive({ method: req.method ?? "GET", source, headers: nodeHeaders(req), body: nodeBody(req, state) });
 */
export function nodeBody(req: IncomingMessage, state: BodyState): AsyncIterable<Uint8Array> {
  return state.kind === "raw" ? onceChunk(state.bytes) : req.iterator({ destroyOnReturn: false });
}

async function* onceChunk(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}

/**
 * Writes an answer unless a response was already started; a request whose body was not read to the end gets
 * `connection: close`.
 *
 * @example
 * writeAnswer(req, res, answerError("not_found"));
 */
export function writeAnswer(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  if (res.headersSent) return;
  const headers: Record<string, string> = { ...answer.headers };
  if (!req.complete) headers.connection = "close";
  res.writeHead(answer.status, headers).end(answer.body);
}

/**
 * Resolves true once the response was sent whole, false when it closed before that.
 *
 * @example
 * if (!(await responseSent(res))) await ticket.fail(new Error("the response was closed before it was sent"));
 */
export function responseSent(res: ServerResponse): Promise<boolean> {
  if (res.writableFinished) return Promise.resolve(true);
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    res.once("finish", () => resolve(true));
    res.once("close", () => resolve(res.writableFinished));
  });
}

/**
 * Hands a node request to the receiver: a body a parser already consumed is answered 500 naming `host`'s fix (and
 * logged); otherwise the raw bytes go to `receiver.receive`.
 *
 * @example
 * const answer = await receiveNode(receiver, receiver.log, "express", req, "stripe");
 */
export function receiveNode(
  receiver: Receiver,
  log: Logger,
  host: BodyParserHost,
  req: IncomingMessage,
  source: string,
  viaReplay = false,
): Promise<Answer> {
  const state = nodeBodyState(req);
  if (state.kind === "parsed" && req.method === "POST") {
    logBodyParsed(log, host, { source, parsedAs: state.parsedAs });
    return Promise.resolve(bodyParsedAnswer(host));
  }
  return receiver.receive({
    method: req.method ?? "GET",
    source,
    headers: nodeHeaders(req),
    body: nodeBody(req, state),
    ...(req.socket.remoteAddress !== undefined && { clientAddress: req.socket.remoteAddress }),
    ...(viaReplay && { viaReplay: true }),
  });
}
