import { createHash } from "node:crypto";
import {
  fromHex,
  hmac,
  matchSecret,
  secretKeys,
  numberField,
  parseUnixSeconds,
  stringField,
  withinWindow,
} from "./hmac.js";
import { jsonTooDeep, TOO_DEEP_DETAIL } from "./json-depth.js";
import type { ParsedEvent, Provider, VerifyInput, VerifyResult } from "./types.js";

/** Options of the Slack provider. */
export interface SlackOptions {
  /**
   * How far `X-Slack-Request-Timestamp` may lie from now, in either direction, in seconds.
   * @defaultValue 300 (Slack's five minutes; python-slack-sdk checks `abs(now − ts) > 300`)
   * @example slackProvider({ toleranceSeconds: 120 })
   */
  readonly toleranceSeconds?: number;
}

const PREFIX = "v0=";
const TEXT = { "content-type": "text/plain; charset=utf-8" };
const decoder = new TextDecoder("utf-8", { fatal: true });

type Failure = Extract<VerifyResult, { ok: false }>;
type Parsed = { ok: true; value: ParsedEvent } | Failure;

/**
 * Slack: `X-Slack-Signature: v0=hex` over `v0:{X-Slack-Request-Timestamp}:{raw}` with HMAC-SHA256 and the app's
 * signing secret, checked over the raw bytes before any parsing. Which format the body is in is decided from
 * those signed bytes (a JSON object, else `application/x-www-form-urlencoded`), never from the unsigned
 * `Content-Type`. What each body becomes:
 *
 * - `url_verification` (JSON): answered 200 with the `challenge` as text/plain; nothing is written.
 * - `event_callback` (Events API): dedupe key `event_id` (retries with `X-Slack-Retry-Num` carry the same one),
 *   type `event.type` (`app_mention`), `occurredAt` from `event_time`; no entity.
 * - `app_rate_limited` (JSON, no `event_id`): keyed by team and `minute_rate_limited`, type `app_rate_limited`.
 * - interactivity (form `payload=<json>`): type `payload.type` (`block_actions`), payload the inner JSON.
 * - slash command (form with `command`): type `command:/name`, payload the form's fields.
 * - `ssl_check=1` (form): answered 200 with an empty body; nothing is written.
 *
 * Interactivity and commands are keyed by `trigger_id`; without one (e.g. `block_suggestion`) the last resort is
 * `sha256:` plus the raw body's hex digest. Slack does not retry those requests, so a body hash is stable enough.
 *
 * @example
 * const provider = slackProvider();
 * const result = provider.verify({ body, headers, secrets: [process.env.SLACK_SIGNING_SECRET!], now: Date.now() });
 * if (result.ok && "reply" in result) return result.reply; // url_verification: the challenge
 */
export function slackProvider(options: SlackOptions = {}): Provider {
  const keyOf = secretKeys();
  const tolerance = options.toleranceSeconds ?? 300;
  return {
    name: "slack",
    verify(input: VerifyInput): VerifyResult {
      const header = input.headers.get("x-slack-signature");
      if (!header) return { ok: false, reason: "signature_missing" };
      const timestamp = input.headers.get("x-slack-request-timestamp");
      const t = parseUnixSeconds(timestamp);
      if (t === null) return { ok: false, reason: "timestamp_missing" };
      const signature = header.startsWith(PREFIX) ? fromHex(header.slice(PREFIX.length)) : null;
      if (!signature) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, [signature], (secret) =>
        hmac("sha256", keyOf(secret), [`v0:${timestamp}:`, input.body]),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      if (!withinWindow(t, input.now, tolerance)) return { ok: false, reason: "timestamp_outside_window" };
      return parseSlackBody(input.body, secretIndex);
    },
  };
}

function parseSlackBody(body: Uint8Array, secretIndex: number): VerifyResult {
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    return notSlack();
  }
  const isJson = text.trimStart().startsWith("{");
  if (isJson && jsonTooDeep(text)) return tooDeep();
  const json = isJson ? parseObject(text) : undefined;
  if (json?.type === "url_verification") {
    const challenge = stringField(json.challenge);
    if (!challenge)
      return { ok: false, reason: "event_id_missing", detail: "the url_verification has no `challenge`" };
    return { ok: true, secretIndex, reply: { status: 200, headers: TEXT, body: challenge } };
  }
  const form = json ? undefined : new URLSearchParams(text);
  if (form?.get("ssl_check") === "1")
    return { ok: true, secretIndex, reply: { status: 200, headers: TEXT, body: "" } };
  const parsed = json ? eventsApi(json) : form ? formBody(form, body) : notSlack();
  if (!parsed.ok) return parsed;
  // Slack shows a slash command's or an interaction's response body to the user: acknowledge with an empty 200.
  return { ok: true, secretIndex, event: form ? { ...parsed.value, acknowledge: EMPTY_ACK } : parsed.value };
}

const EMPTY_ACK = { status: 200, headers: {}, body: "" } as const;

function notSlack(): Failure {
  return {
    ok: false,
    reason: "body_not_json",
    detail: "the body must be a JSON object or a form with `payload` or `command`",
  };
}

function tooDeep(): Failure {
  return { ok: false, reason: "body_too_deep", detail: TOO_DEEP_DETAIL };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === "object" && !Array.isArray(value))
      return value as Record<string, unknown>;
  } catch {
    // Not JSON: answered below with the uniform detail, never the parser's message.
  }
  return undefined;
}

function eventsApi(body: Record<string, unknown>): Parsed {
  const envelope = stringField(body.type);
  if (envelope === "app_rate_limited") {
    const minute = numberField(body.minute_rate_limited);
    const team = stringField(body.team_id) ?? stringField(body.api_app_id);
    if (minute === undefined || !team)
      return { ok: false, reason: "event_id_missing", detail: "app_rate_limited lacks its team or minute" };
    const key = `app_rate_limited:${team}:${minute}`;
    const occurredAt = new Date(minute * 1000);
    return {
      ok: true,
      value: {
        dedupeKey: key,
        type: envelope,
        payload: body,
        payloadIsBody: true,
        occurredAt,
        dedupeOnBodyHash: false,
      },
    };
  }
  const id = stringField(body.event_id);
  if (!id) return { ok: false, reason: "event_id_missing", detail: "the Slack event has no `event_id`" };
  const type = stringField((body.event as { type?: unknown } | null | undefined)?.type);
  if (!type)
    return { ok: false, reason: "event_type_missing", detail: "the Slack event has no `event.type`" };
  const time = numberField(body.event_time);
  return {
    ok: true,
    value: {
      dedupeKey: id,
      type,
      payload: body,
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      ...(time !== undefined && { occurredAt: new Date(time * 1000) }),
    },
  };
}

function formBody(form: URLSearchParams, raw: Uint8Array): Parsed {
  const keyed = (
    triggerId: string | null | undefined,
  ): Pick<ParsedEvent, "dedupeKey" | "dedupeOnBodyHash"> => {
    const id = stringField(triggerId);
    return id
      ? { dedupeKey: id, dedupeOnBodyHash: false }
      : { dedupeKey: `sha256:${createHash("sha256").update(raw).digest("hex")}`, dedupeOnBodyHash: true };
  };
  const interaction = form.get("payload");
  if (interaction !== null) {
    if (jsonTooDeep(interaction)) return tooDeep();
    const payload = parseObject(interaction);
    if (!payload)
      return { ok: false, reason: "body_not_json", detail: "the form's `payload` is not a JSON object" };
    const type = stringField(payload.type);
    if (!type)
      return { ok: false, reason: "event_type_missing", detail: "the interaction payload has no `type`" };
    return { ok: true, value: { ...keyed(stringField(payload.trigger_id)), type, payload } };
  }
  const command = stringField(form.get("command"));
  if (!command) return notSlack();
  const payload = Object.fromEntries(form);
  return { ok: true, value: { ...keyed(form.get("trigger_id")), type: `command:${command}`, payload } };
}
