import { fromHex, hmac, matchSecret, parseJsonObject, secretKeys, stringField } from "./hmac.js";
import type { Provider, VerifyInput, VerifyResult } from "./types.js";

const PREFIX = "sha256=";

/**
 * GitHub: `X-Hub-Signature-256: sha256=hex` over the raw body with HMAC-SHA256, no timestamp and so no window; the
 * dedupe key is `X-GitHub-Delivery` and the type is `X-GitHub-Event`, plus `.action` when the body has one
 * (`pull_request.opened`, but plain `push`). No entity by default.
 *
 * The delivery id header is not covered by the signature, so the body's sha256 dedupes too (docs/architecture.md §3).
 *
 * @example
 * const provider = githubProvider();
 * const result = provider.verify({ body, headers, secrets: [process.env.GITHUB_WEBHOOK_SECRET!], now: Date.now() });
 * if (result.ok) console.log(result.event.type); // "pull_request.opened"
 */
export function githubProvider(): Provider {
  const keyOf = secretKeys();
  return {
    name: "github",
    verify(input: VerifyInput): VerifyResult {
      const header = input.headers.get("x-hub-signature-256");
      if (!header) return { ok: false, reason: "signature_missing" };
      const signature = header.startsWith(PREFIX) ? fromHex(header.slice(PREFIX.length)) : null;
      if (!signature) return { ok: false, reason: "signature_malformed" };
      const secretIndex = matchSecret(input.secrets, [signature], (secret) =>
        hmac("sha256", keyOf(secret), [input.body]),
      );
      if (secretIndex < 0) return { ok: false, reason: "signature_mismatch" };
      return parseGithubEvent(input, secretIndex);
    },
  };
}

function parseGithubEvent(input: VerifyInput, secretIndex: number): VerifyResult {
  const json = parseJsonObject(input.body);
  if (!json.ok) return json;
  const delivery = stringField(input.headers.get("x-github-delivery"));
  if (!delivery)
    return { ok: false, reason: "event_id_missing", detail: "the `X-GitHub-Delivery` header is missing" };
  const event = stringField(input.headers.get("x-github-event"));
  if (!event)
    return { ok: false, reason: "event_type_missing", detail: "the `X-GitHub-Event` header is missing" };
  const action = stringField(json.value.action);
  return {
    ok: true,
    secretIndex,
    event: {
      dedupeKey: delivery,
      type: action ? `${event}.${action}` : event,
      payload: json.value,
      payloadIsBody: true,
      dedupeOnBodyHash: true,
    },
  };
}
