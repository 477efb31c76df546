import { answerError } from "../errors.js";
import type { Receiver } from "./core.js";
import { sourceFromPath } from "./route.js";

/** Options of {@link createFetchHandler}. */
export interface FetchHandlerOptions {
  /**
   * The path deliveries arrive under; the next segment names the source.
   * @defaultValue "/webhooks"
   */
  readonly basePath?: string;
}

/**
 * The Web-standard adapter: `(Request) => Promise<Response>`, for Hono, Next.js App Router routes, Bun and Deno.
 * It reads the body itself; mount no body parser in front of it.
 *
 * @example
 * const handle = createFetchHandler(receiver);
 * export const POST = (request: Request) => handle(request); // app/webhooks/[source]/route.ts
 */
export function createFetchHandler(receiver: Receiver, options: FetchHandlerOptions = {}) {
  const basePath = options.basePath ?? "/webhooks";
  return async (request: Request): Promise<Response> => {
    const source = sourceFromPath(new URL(request.url).pathname, basePath);
    const answer =
      source === undefined
        ? answerError("not_found")
        : await receiver.receive({
            method: request.method,
            source,
            headers: request.headers,
            body: request.body ? chunksOf(request.body) : null,
          });
    return new Response(answer.body === "" ? null : answer.body, {
      status: answer.status,
      headers: answer.headers,
    });
  };
}

async function* chunksOf(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    // Stopping early (413 at the crossing byte) cancels the rest of the stream instead of buffering it.
    await reader.cancel().catch(() => {});
  }
}
