import type { HeaderBag } from "../providers/types.js";

// Kept on the ledger row so an operator can see how an event arrived; anything that could authenticate a request
// is dropped whatever its name's prefix.
const KEEP =
  /^(content-type|user-agent|x-github-|x-shopify-|x-slack-retry-|x-awardee-|webhook-id|webhook-timestamp|svix-id|svix-timestamp|x-request-id)/;
const NEVER = /signature|hmac|token|secret|authorization|cookie|api-key/;

/**
 * The headers worth keeping on the ledger row: provider ids and routing data, never signatures or credentials.
 *
 * @example
 * keptHeaders(new Headers({ "x-github-event": "push", "x-hub-signature-256": "sha256=…" })); // { "x-github-event": "push" }
 */
export function keptHeaders(headers: HeaderBag): Record<string, string> {
  const kept: Record<string, string> = {};
  headers.forEach((value, name) => {
    const lower = name.toLowerCase();
    if (KEEP.test(lower) && !NEVER.test(lower)) kept[lower] = value;
  });
  return kept;
}
