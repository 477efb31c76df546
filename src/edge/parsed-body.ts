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
