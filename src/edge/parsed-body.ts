import type { IncomingMessage } from "node:http";
import { type Answer, answerError } from "../errors.js";
import type { Logger } from "../log.js";

/**
 * What a framework left of a request body by the time hookledger sees it: the untouched stream (read it), the exact
 * bytes a raw parser kept (`express.raw()`, Hono's `c.req.arrayBuffer()`), or nothing usable because a parser turned
 * the bytes into an object or a string. Signatures are over bytes, so only the first two can be verified.
 *
 * @example
 * const state: BodyState = nodeBodyState(req); // { kind: "parsed", parsedAs: "an object" } after express.json()
 */
export type BodyState =
  | { readonly kind: "unread" }
  | { readonly kind: "raw"; readonly bytes: Uint8Array }
  | { readonly kind: "parsed"; readonly parsedAs: string };

/**
 * The framework whose fix the answer and the log line name.
 *
 * @example
 * bodyParsedAnswer("node"); // the fix names Next.js's `bodyParser: false`
 */
export type BodyParserHost = "express" | "node" | "fastify" | "hono" | "fetch";

const FIX: Readonly<Record<BodyParserHost, string>> = {
  express:
    "mount hookledger's route before express.json(), express.urlencoded() and express.text(), or mount those " +
    "parsers on your other routes only (express.raw() is fine: it keeps the exact bytes)",
  node:
    "turn the body parser off for this route: in a Next.js pages API route `export const config = { api: " +
    "{ bodyParser: false } }`; with Express or Connect, mount hookledger before the body parser",
  fastify: "register hookledger's plugin without a preParsing or onRequest hook that reads the body",
  hono:
    "do not read the body (c.req.json(), c.req.text(), c.req.parseBody(), validators) in middleware that runs " +
    "before hookledger's route; c.req.arrayBuffer() is fine: it keeps the exact bytes",
  fetch: "hand hookledger the Request before anything reads its body (read a request.clone() elsewhere)",
};

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

/**
 * Where a Web Request's body stands; `cached` is what the framework kept of a body it read (Hono's `bodyCache`).
 *
 * @example
 * const state = await webBodyState(c.req.raw, c.req.bodyCache);
 */
export async function webBodyState(
  request: Request,
  cached: { arrayBuffer?: PromiseLike<ArrayBuffer> | ArrayBuffer; blob?: PromiseLike<Blob> | Blob } = {},
): Promise<BodyState> {
  if (!request.bodyUsed) return { kind: "unread" };
  if (cached.arrayBuffer) return { kind: "raw", bytes: new Uint8Array(await cached.arrayBuffer) };
  if (cached.blob) return { kind: "raw", bytes: new Uint8Array(await (await cached.blob).arrayBuffer()) };
  // Text and JSON caches went through a UTF-8 decoder (which drops a BOM and replaces invalid bytes).
  return { kind: "parsed", parsedAs: Object.keys(cached)[0] ?? "a stream read elsewhere" };
}

function describe(body: unknown): string {
  if (body === undefined) return "a stream read elsewhere";
  if (body === null) return "null";
  return typeof body === "string" ? "a string" : `an ${typeof body}`;
}

/**
 * The answer to a delivery whose body a parser consumed before hookledger: 500, so the provider retries and
 * nothing is lost once the app is fixed. Never 2xx (the event would be lost) and never 4xx (some providers treat
 * 4xx as final and stop retrying). The body names the cause and the fix: it is the app's misconfiguration, and
 * providers show the body in their delivery logs.
 *
 * @example
 * bodyParsedAnswer("express"); // { status: 500, body: '{"error":"body_already_parsed",…}' }
 */
export function bodyParsedAnswer(host: BodyParserHost): Answer {
  return answerError("body_already_parsed", undefined, FIX[host]);
}

/**
 * Logs a consumed body at error level, naming the cause and the fix in the message itself.
 *
 * @example
 * logBodyParsed(log, "express", { source: "stripe", parsedAs: "an object" });
 */
export function logBodyParsed(
  log: Logger,
  host: BodyParserHost,
  fields: { source: string | undefined; parsedAs: string },
): void {
  log.error(
    { ...fields, result: "body_already_parsed", status: 500 },
    `a body parser read this webhook before hookledger (the body arrived as ${fields.parsedAs}), so its ` +
      `signature cannot be verified; answered 500 so the provider retries. Fix: ${FIX[host]}`,
  );
}

/**
 * Chunks of a Web stream; stopping early (413 at the crossing byte) cancels the rest instead of buffering it.
 *
 * @example
 * await receiver.receive({ method, source, headers: request.headers, body: webChunks(request.body) });
 */
export async function* webChunks(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * Passes chunks through and keeps them, so an inline guard can hand the app's handler the bytes it verified.
 *
 * @example
 * const tape = recordChunks(req.iterator());
 * await guard.admit({ ...delivery, body: tape.chunks }); tape.bytes();
 */
export function recordChunks(source: AsyncIterable<Uint8Array>): {
  chunks: AsyncIterable<Uint8Array>;
  bytes(): Buffer;
} {
  const kept: Uint8Array[] = [];
  return {
    chunks: (async function* () {
      for await (const chunk of source) {
        kept.push(chunk);
        yield chunk;
      }
    })(),
    bytes: () => Buffer.concat(kept),
  };
}
