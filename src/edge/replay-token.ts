import { createHash } from "node:crypto";
import { macEquals } from "../providers/hmac.js";
import type { HeaderBag } from "../providers/types.js";

/**
 * The header a re-POST on the replay route (`POST /replay/:source`) carries instead of a signature.
 *
 * @example
 * await fetch(`${base}/replay/stripe`, { method: "POST", headers: { [REPLAY_TOKEN_HEADER]: token }, body });
 */
export const REPLAY_TOKEN_HEADER = "x-hookledger-replay-token";

/** Why a replay token was refused; logged, never told to the sender (the 401 is uniform). */
export type ReplayTokenFailure = "replay_token_unset" | "replay_token_missing" | "replay_token_mismatch";

/**
 * Checks the replay token of a request against the configured one. Fails closed: with no (or an empty) configured
 * token, every request is refused. Both sides are hashed (sha256) before the constant-time comparison, so neither
 * the comparison's time nor a length check tells anything about the token's length or prefix.
 *
 * @example
 * const checked = replayTokenMatches(process.env.HOOKLEDGER_REPLAY_TOKEN, request.headers);
 * if (!checked.ok) return answerError("unauthorized");
 */
export function replayTokenMatches(
  configured: string | undefined,
  headers: HeaderBag,
): { readonly ok: true } | { readonly ok: false; readonly reason: ReplayTokenFailure } {
  if (configured === undefined || configured === "") return { ok: false, reason: "replay_token_unset" };
  const received = headers.get(REPLAY_TOKEN_HEADER);
  if (received === null) return { ok: false, reason: "replay_token_missing" };
  const matches = macEquals(sha256(configured), sha256(received));
  return matches ? { ok: true } : { ok: false, reason: "replay_token_mismatch" };
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
