import { createHmac } from "node:crypto";
import { standardSecretKey } from "../providers/standard.js";
import { alertMessageId, slackMessage, webhookMessage } from "./message.js";
import type { OutgoingAlert } from "./outbox.js";
import type { AlertDestination } from "./types.js";

/** The result of one send: `error` never holds the URL (a Slack URL is its token) nor a response body. */
export type SendResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/**
 * Posts one message to one destination within `timeoutMs`: Slack's `{ text }`, or a Standard Webhooks delivery
 * (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`).
 * Any 2xx is success; `signal` abandons the send (the service stopping).
 *
 * @example
 * const result = await sendAlert(destination, message, { timeoutMs: 10_000 });
 * if (!result.ok) log.warn({ destination: destination.name, error: result.error }, "alert not sent");
 */
export async function sendAlert(
  destination: AlertDestination,
  message: OutgoingAlert,
  options: { timeoutMs: number; now?: number; signal?: AbortSignal },
): Promise<SendResult> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  let body: string;
  if (destination.kind === "slack") {
    body = JSON.stringify(slackMessage(message.kind, message.data));
  } else {
    body = JSON.stringify(webhookMessage(message.kind, message.data, message.createdAt));
    const id = alertMessageId(message);
    const timestamp = String(Math.floor((options.now ?? Date.now()) / 1000));
    headers["webhook-id"] = id;
    headers["webhook-timestamp"] = timestamp;
    headers["webhook-signature"] = `v1,${sign(destination.secret, `${id}.${timestamp}.${body}`)}`;
  }
  try {
    const response = await fetch(destination.url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: options.signal
        ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
        : AbortSignal.timeout(options.timeoutMs),
    });
    await response.body?.cancel().catch(() => {});
    return response.ok ? { ok: true } : { ok: false, error: `HTTP ${response.status}` };
  } catch (error) {
    if (options.signal?.aborted) return { ok: false, error: "stopped before an answer" };
    return { ok: false, error: describe(error, options.timeoutMs) };
  }
}

function sign(secret: string, text: string): string {
  // Validated when the configuration was resolved (config/alerts.ts); an empty key would still sign, uselessly.
  const key = standardSecretKey(secret) ?? Buffer.alloc(0);
  return createHmac("sha256", key).update(text).digest("base64");
}

// Node's fetch errors name the address in their causes; only the kind and the system code are kept.
function describe(error: unknown, timeoutMs: number): string {
  const name = (error as Error | undefined)?.name;
  if (name === "TimeoutError" || name === "AbortError") return `no answer within ${timeoutMs} ms`;
  const code = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  return typeof code === "string" && /^[A-Z_]+$/.test(code) ? `network error ${code}` : "network error";
}
