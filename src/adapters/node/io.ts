import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { type BodyRead, type CappedBody, joined } from "../../edge/body.js";
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
  return new NodeHeaderBag(req.headers);
}

// A class rather than an object of closures: one small allocation per request, methods shared.
class NodeHeaderBag implements HeaderBag {
  constructor(private readonly headers: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const value = this.headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }
  forEach(callback: (value: string, name: string) => void): void {
    for (const [name, value] of Object.entries(this.headers)) {
      if (value !== undefined) callback(Array.isArray(value) ? value.join(", ") : value, name);
    }
  }
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
 * The body's chunks: the bytes a raw parser kept, else the request stream. The edge reads it whole through
 * `readCapped` (listeners on the stream, no promise per chunk); iterating it instead (to record the chunks) reads
 * the stream's async iterator. Without destroyOnReturn an early stop (413) leaves the socket alive to carry the
 * answer; {@link writeAnswer}'s `connection: close` then ends it instead of reading the rest.
 *
 * @example
 * await receiver.receive({ method: req.method ?? "GET", source, headers: nodeHeaders(req), body: nodeBody(req, state) });
 */
export function nodeBody(req: IncomingMessage, state: BodyState): AsyncIterable<Uint8Array> & CappedBody {
  return state.kind === "raw" ? new KeptBody(state.bytes) : new RequestBody(req);
}

class KeptBody implements AsyncIterable<Uint8Array>, CappedBody {
  constructor(private readonly bytes: Uint8Array) {}
  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    yield this.bytes;
  }
  readCapped(maxBytes: number): Promise<BodyRead> {
    return Promise.resolve(
      this.bytes.byteLength > maxBytes ? { ok: false } : { ok: true, bytes: this.bytes },
    );
  }
}

class RequestBody implements AsyncIterable<Uint8Array>, CappedBody {
  constructor(private readonly req: IncomingMessage) {}
  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return this.req.iterator({ destroyOnReturn: false });
  }
  readCapped(maxBytes: number): Promise<BodyRead> {
    const { req } = this;
    return new Promise((resolve, reject) => {
      const parts: Buffer[] = [];
      let total = 0;
      const onData = (chunk: Buffer) => {
        total += chunk.byteLength;
        if (total <= maxBytes) {
          parts.push(chunk);
          return;
        }
        stop();
        // Nothing more is read; the answer goes out with `connection: close`.
        req.pause();
        resolve({ ok: false });
      };
      const onEnd = () => {
        stop();
        resolve({ ok: true, bytes: joined(parts, total) });
      };
      const onError = (error: Error) => {
        stop();
        reject(error);
      };
      const onClose = () => onError(new Error("the request closed before its body ended"));
      const stop = () => {
        req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      };
      req.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
    });
  }
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
  // With its length known, node sends head and body in one write instead of chunked framing.
  const headers: Record<string, string> = {
    ...answer.headers,
    "content-length": String(Buffer.byteLength(answer.body)),
  };
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
