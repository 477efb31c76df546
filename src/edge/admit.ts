import { type Answer, answerError } from "../errors.js";
import type { Logger } from "../log.js";
import { storableEvent } from "../ledger/storable.js";
import type { ParsedEvent, ParseFailureReason, VerifyFailureReason } from "../providers/types.js";
import { bodySha256 as bodySha256Of, readCapped } from "./body.js";
import { replayTokenMatches } from "./replay-token.js";
import type { Delivery, Source } from "./receiver.js";
import type { DeliveryResult } from "./observer.js";

/** A delivery that verified: its raw bytes and what the provider made of them. */
export type Admitted =
  | {
      readonly ok: true;
      readonly bytes: Uint8Array;
      /** The secret that matched; `null` for a replay, which the token admitted instead. */
      readonly secretIndex: number | null;
      readonly event: ParsedEvent;
      /** The body's hex sha256, when admitting it took it already ({@link admitOrRecall}). */
      readonly bodySha256?: string;
    }
  | { readonly ok: true; readonly bytes: Uint8Array; readonly secretIndex: number; readonly reply: Answer };

/** What the receiver remembers of a body it answered as a duplicate: the event's stored key and its type. */
export interface RecalledEvent {
  readonly dedupeKey: string;
  readonly type: string;
}

/** A delivery that verified and whose body `recall` knew: a duplicate, answered without parsing the body. */
export interface Recalled {
  readonly ok: true;
  readonly recalled: RecalledEvent;
  readonly bodySha256: string;
}

/** Options of {@link admitDelivery}. */
export interface AdmitOptions {
  /** The token the replay route accepts instead of a signature; unset refuses every replay. */
  readonly replayToken?: string | undefined;
}

const NO_OPTIONS: AdmitOptions = {};

/** A delivery refused before anything touched the database. */
export interface Refused {
  readonly ok: false;
  readonly answer: Answer;
  readonly result: DeliveryResult;
  readonly reason?: string;
}

/**
 * Everything before the claim, shared by the receiver and the inline guard: method, encoding, the size cap (from
 * Content-Length before buffering, else at the crossing byte), one read of the raw body, and the provider's
 * verification. Nothing here touches the database. A delivery on the replay route (`viaReplay`) swaps only the
 * signature check for the replay token (`options.replayToken`; unset refuses every replay) and the provider's
 * `parse`.
 *
 * @example
 * const admitted = await admitDelivery(source, delivery, Date.now(), log);
 * if (!admitted.ok) return admitted.answer;
 */
export async function admitDelivery(
  source: Source,
  delivery: Delivery,
  now: number,
  log: Logger,
  options: AdmitOptions = NO_OPTIONS,
): Promise<Admitted | Refused> {
  const read = await readDelivery(source, delivery, log);
  if (!read.ok) return read;
  if (delivery.viaReplay === true) return admitReplay(source, delivery, read.bytes, options.replayToken, log);
  return verifyDelivery(source, delivery, read.bytes, now, log);
}

/**
 * {@link admitDelivery} for the receiver, with its shortcut for repeated duplicates: for a provider with
 * {@link VerifySteps} (its event comes from the signed body alone), the signature and window are checked, then
 * the body's sha256 goes to `recall`; an event it returns is this delivery's, without parsing the body (the
 * receiver only returns one for a body it answered as a duplicate of a committed event). Otherwise the body is
 * parsed as `verify` would. Every other provider, and the replay route, take {@link admitDelivery}'s path.
 *
 * @example
 * const admitted = await admitOrRecall(source, delivery, Date.now(), log, { recall: (source, sha) => known.get(sha) });
 * if (admitted.ok && "recalled" in admitted) return duplicateAnswer(admitted.recalled.dedupeKey);
 */
export async function admitOrRecall(
  source: Source,
  delivery: Delivery,
  now: number,
  log: Logger,
  options: AdmitOptions & {
    readonly recall: (source: string, bodySha256: string) => RecalledEvent | undefined;
  },
): Promise<Admitted | Recalled | Refused> {
  const read = await readDelivery(source, delivery, log);
  if (!read.ok) return read;
  if (delivery.viaReplay === true) return admitReplay(source, delivery, read.bytes, options.replayToken, log);
  const { steps } = source.provider;
  if (!steps) return verifyDelivery(source, delivery, read.bytes, now, log);
  const { bytes } = read;
  const checked = steps.authenticate({
    body: bytes,
    headers: delivery.headers,
    secrets: source.secrets,
    now,
  });
  if (!checked.ok) return refused(source, checked, log);
  const bodySha256 = bodySha256Of(bytes);
  const recalled = options.recall(source.name, bodySha256);
  if (recalled) return { ok: true, recalled, bodySha256 };
  const parsed = steps.parse(bytes);
  if (!parsed.ok) return refused(source, parsed, log);
  const event = storable(source, parsed.event, log);
  return { ok: true, bytes, secretIndex: checked.secretIndex, event, bodySha256 };
}

async function readDelivery(
  source: Source,
  delivery: Delivery,
  log: Logger,
): Promise<{ readonly ok: true; readonly bytes: Uint8Array } | Refused> {
  if (delivery.method !== "POST") return refuse("method_not_allowed", answerError("method_not_allowed"));
  const encoding = delivery.headers.get("content-encoding");
  if (encoding && encoding.trim().toLowerCase() !== "identity") {
    return refuse("unsupported_encoding", answerError("unsupported_encoding"));
  }
  const declared = delivery.headers.get("content-length");
  if (declared !== null && Number(declared) > source.maxBodyBytes) {
    return refuse("payload_too_large", answerError("payload_too_large"));
  }
  let read: Awaited<ReturnType<typeof readCapped>>;
  try {
    read = await readCapped(delivery.body, source.maxBodyBytes);
  } catch (error) {
    log.warn({ source: source.name, err: (error as Error).message }, "request body could not be read");
    return refuse(
      "malformed",
      answerError("malformed", "the request body could not be read"),
      "body_unreadable",
    );
  }
  return read.ok ? read : refuse("payload_too_large", answerError("payload_too_large"));
}

function verifyDelivery(
  source: Source,
  delivery: Delivery,
  bytes: Uint8Array,
  now: number,
  log: Logger,
): Admitted | Refused {
  const verified = source.provider.verify({
    body: bytes,
    headers: delivery.headers,
    secrets: source.secrets,
    now,
  });
  if (!verified.ok) return refused(source, verified, log);
  if ("reply" in verified)
    return { ok: true, bytes, secretIndex: verified.secretIndex, reply: verified.reply };
  const event = storable(source, verified.event, log);
  return { ok: true, bytes, secretIndex: verified.secretIndex, event };
}

// A failed verification: a parse failure (it has a detail) is a 400 naming it, anything else the uniform 401.
function refused(
  source: Source,
  failure: { readonly reason: VerifyFailureReason } | { readonly reason: ParseFailureReason; detail: string },
  log: Logger,
): Refused {
  const fields = { source: source.name, reason: failure.reason };
  if ("detail" in failure) {
    log.info({ ...fields, result: "malformed" }, "delivery refused");
    return refuse("malformed", answerError("malformed", failure.detail), failure.reason);
  }
  log.warn({ ...fields, result: "unauthorized" }, "delivery refused");
  return refuse("unauthorized", answerError("unauthorized"), failure.reason);
}

function refuse(result: DeliveryResult, answer: Answer, reason?: string): Refused {
  return { ok: false, answer, result, ...(reason !== undefined && { reason }) };
}

/**
 * The event as the ledger can hold it (docs/architecture.md §4): a verified delivery is stored, never answered 503
 * forever for a value Postgres refuses. Before the seen-cache and the claim, so both use the stored key.
 */
function storable(source: Source, parsed: ParsedEvent, log: Logger): ParsedEvent {
  const { event, changes } = storableEvent(parsed);
  if (changes.length > 0) {
    log.warn(
      {
        source: source.name,
        eventId: event.dedupeKey,
        type: event.type,
        changes,
        ...(event.dedupeKey !== parsed.dedupeKey && { providerId: parsed.dedupeKey.slice(0, 200) }),
      },
      "delivery holds values the ledger cannot hold as they are: stored with them made storable, the raw body exact",
    );
  }
  return event;
}

function admitReplay(
  source: Source,
  delivery: Delivery,
  bytes: Uint8Array,
  token: string | undefined,
  log: Logger,
): Admitted | Refused {
  const fields = { source: source.name, route: "replay" };
  const checked = replayTokenMatches(token, delivery.headers);
  if (!checked.ok) {
    log.warn({ ...fields, reason: checked.reason, result: "unauthorized" }, "replay refused");
    return { ok: false, answer: answerError("unauthorized"), result: "unauthorized", reason: checked.reason };
  }
  const parse = source.provider.parse;
  if (!parse) {
    const detail = `replay is not supported for provider ${source.provider.name}; use the provider's own redelivery`;
    return {
      ok: false,
      answer: answerError("not_found", detail),
      result: "malformed",
      reason: "replay_unsupported",
    };
  }
  const parsed = parse(bytes, delivery.headers);
  if (!parsed.ok) {
    log.info({ ...fields, reason: parsed.reason, result: "malformed" }, "replay refused");
    return {
      ok: false,
      answer: answerError("malformed", parsed.detail),
      result: "malformed",
      reason: parsed.reason,
    };
  }
  return { ok: true, bytes, secretIndex: null, event: storable(source, parsed.event, log) };
}
