import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { type AddressRules, guardedLookupFor, RefusedAddressError, refusedAddress } from "./address.js";

/** One outbound POST. */
export interface HttpCall {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Allowed and denied ranges of the dialled address, besides the link-local refusal of every call. */
  readonly rules?: AddressRules;
}

/** What the destination answered: its status, headers, the first bytes of its body as text, and the time taken. */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly snippet: string;
  readonly ms: number;
}

const SNIPPET_BYTES = 512;
const plainGuard = guardedLookupFor({});

/**
 * Checks that a configured destination is an http(s) URL; returns it parsed, or throws naming `field`.
 *
 * @example
 * const url = destinationUrl("https://crm.internal/hooks", "outbox.crm.url");
 */
export function destinationUrl(value: unknown, field: string): URL {
  let url: URL | undefined;
  try {
    url = typeof value === "string" ? new URL(value) : undefined;
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new TypeError(`${field}: expected an http:// or https:// URL, got ${JSON.stringify(value)}`);
  }
  return url;
}

/**
 * POSTs once and resolves with the answer whatever its status; rejects on a network failure, a refused address,
 * the timeout or `signal`. Redirects are never followed (a 3xx is an answer like any other). Hand-written on
 * node:http because `fetch` offers no hook on the address it dials, which the link-local refusal must check.
 *
 * @example
 * const answer = await postOnce({ url: new URL("http://127.0.0.1:8080/"), headers: {}, body: "{}", timeoutMs: 15_000 });
 */
export function postOnce(call: HttpCall): Promise<HttpAnswer> {
  const started = performance.now();
  const host = call.url.hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host) !== 0 ? refusedAddress(host, call.rules) : undefined;
  if (literal !== undefined) {
    return Promise.reject(new RefusedAddressError(`refused to connect to ${call.url.host}: ${literal}`));
  }
  const body = typeof call.body === "string" ? Buffer.from(call.body) : call.body;
  const request = call.url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(call.url, {
      method: "POST",
      headers: { ...call.headers, "content-length": String(body.byteLength) },
      lookup: call.rules ? guardedLookupFor(call.rules) : plainGuard,
      signal: call.signal,
      timeout: call.timeoutMs,
    });
    const deadline = setTimeout(
      () => req.destroy(new Error(`no answer within ${call.timeoutMs} ms`)),
      call.timeoutMs,
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${call.timeoutMs} ms`)));
    req.on("error", (error) => {
      clearTimeout(deadline);
      reject(error);
    });
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      res.on("data", (chunk: Buffer) => {
        if (kept >= SNIPPET_BYTES) return;
        chunks.push(chunk.subarray(0, SNIPPET_BYTES - kept));
        kept += Math.min(chunk.length, SNIPPET_BYTES - kept);
      });
      res.on("error", (error) => {
        clearTimeout(deadline);
        reject(error);
      });
      res.on("end", () => {
        clearTimeout(deadline);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          snippet: Buffer.concat(chunks).toString("utf8"),
          ms: performance.now() - started,
        });
      });
    });
    req.end(body);
  });
}

/**
 * The delay a `Retry-After` header asks for, in milliseconds (seconds or an HTTP date), or undefined.
 *
 * @example
 * retryAfterMs("120"); // 120000
 */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === "") return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
