import {
  type BodyParserHost,
  type BodyState,
  bodyParsedAnswer,
  logBodyParsed,
} from "../../edge/parsed-body.js";
import type { Receiver } from "../../edge/receiver.js";
import type { Logger } from "../../log.js";
import type { Answer } from "../../errors.js";

// The Web-standard (Request/Response) helpers the fetch and Hono adapters share.

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
 * The body's chunks: the bytes a framework kept, else the request's stream, else none.
 *
 * @example
 * await receiver.receive({ method: request.method, source, headers: request.headers, body: webBody(request, state) });
 */
export function webBody(
  request: Request,
  state: BodyState,
): Iterable<Uint8Array> | AsyncIterable<Uint8Array> | null {
  if (state.kind === "raw") return [state.bytes];
  return request.body ? webChunks(request.body) : null;
}

/**
 * An answer as a Web Response (an empty body as `null`, as a 204/304-safe Response needs).
 *
 * @example
 * return toResponse(answerError("not_found"));
 */
export function toResponse(answer: Answer): Response {
  return new Response(answer.body === "" ? null : answer.body, {
    status: answer.status,
    headers: answer.headers,
  });
}

/**
 * Hands a Web Request to the receiver: a body something already read (and did not keep as bytes in `cached`) is
 * answered 500 naming `host`'s fix (and logged); otherwise the raw bytes go to `receiver.receive`.
 *
 * @example
 * const answer = await receiveWeb(receiver, receiver.log, "fetch", request, "stripe");
 */
export async function receiveWeb(
  receiver: Receiver,
  log: Logger,
  host: BodyParserHost,
  request: Request,
  source: string,
  options: { readonly cached?: Parameters<typeof webBodyState>[1]; readonly viaReplay?: boolean } = {},
): Promise<Answer> {
  const state = await webBodyState(request, options.cached);
  if (state.kind === "parsed" && request.method === "POST") {
    logBodyParsed(log, host, { source, parsedAs: state.parsedAs });
    return bodyParsedAnswer(host);
  }
  return receiver.receive({
    method: request.method,
    source,
    headers: request.headers,
    body: webBody(request, state),
    ...(options.viaReplay && { viaReplay: true }),
  });
}
