/**
 * Stable codes of the failures the HTTP edge answers. Each maps to exactly one status, here and nowhere else.
 *
 * @example
 * answer("payload_too_large"); // { status: 413, ... }
 */
export type ErrorCode =
  | "unauthorized"
  | "malformed"
  | "not_found"
  | "unknown_source"
  | "method_not_allowed"
  | "payload_too_large"
  | "unsupported_encoding"
  | "unavailable"
  | "body_already_parsed"
  | "in_flight"
  | "too_many_failures"
  | "internal";

const STATUS: Readonly<Record<ErrorCode, number>> = {
  malformed: 400,
  unauthorized: 401,
  not_found: 404,
  unknown_source: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_encoding: 415,
  too_many_failures: 429,
  internal: 500,
  // The app's misconfiguration, not the sender's: a 5xx so the provider retries and nothing is lost once it is
  // fixed; never 2xx (the event would be lost), never 4xx (some providers treat 4xx as final).
  body_already_parsed: 500,
  unavailable: 503,
  in_flight: 503,
};

const MESSAGE: Readonly<Record<ErrorCode, string>> = {
  malformed: "the delivery is verified but malformed",
  // One message for every cause (missing, malformed, wrong signature, timestamp, unknown secret): the reason is
  // logged, never told to the sender.
  unauthorized: "signature verification failed",
  not_found: "no such route: deliveries go to POST /webhooks/:source",
  unknown_source: "no source with that name is configured",
  method_not_allowed: "webhook deliveries must use POST",
  payload_too_large: "the body exceeds this source's size limit",
  unsupported_encoding: "Content-Encoding must be identity",
  too_many_failures: "too many failed verifications from this address; retry later",
  internal: "",
  unavailable: "the ledger is unavailable; retry later",
  body_already_parsed: "a body parser consumed the request before hookledger could verify its raw bytes",
  in_flight: "an earlier delivery of this event is still being processed; retry later",
};

/** The HTTP status for a code. */
export function statusOf(code: ErrorCode): number {
  return STATUS[code];
}

/** A response as the edge builds it, before an adapter turns it into its framework's type. */
export interface Answer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

const JSON_TYPE = { "content-type": "application/json; charset=utf-8" };

/**
 * The uniform error answer: `{"error": code, "message": …}` (plus `detail` for a malformed delivery). Unknown
 * failures are `internal`: a 500 with an empty body, the cause only in the log.
 *
 * @example
 * answerError("method_not_allowed"); // 405 with Allow: POST
 */
export function answerError(code: ErrorCode, detail?: string, fix?: string): Answer {
  const status = STATUS[code];
  if (code === "internal") return { status, headers: {}, body: "" };
  const headers: Record<string, string> = { ...JSON_TYPE };
  if (code === "method_not_allowed") headers.allow = "POST";
  // Providers retry a 503; Retry-After tells them how soon is useful.
  if (code === "unavailable" || code === "in_flight") headers["retry-after"] = "5";
  const body = {
    error: code,
    message: MESSAGE[code],
    ...(detail !== undefined && { detail }),
    ...(fix !== undefined && { fix }),
  };
  return { status, headers, body: JSON.stringify(body) };
}

/**
 * A successful answer with a JSON body.
 *
 * @example
 * answerJson(200, { status: "accepted", id: "evt_1" });
 */
export function answerJson(status: number, body: unknown): Answer {
  return { status, headers: JSON_TYPE, body: JSON.stringify(body) };
}
