import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import { Webhook } from "standardwebhooks";

/** One request an alert receiver got. */
export interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** A real HTTP server standing for Slack's incoming webhook or a URL that gets alerts. */
export interface AlertReceiver {
  /** The URL to configure, with a path that stands for a Slack token. */
  readonly url: string;
  readonly received: Received[];
  /** The JSON bodies received. */
  bodies(): unknown[];
  close(): Promise<void>;
}

/**
 * How the receiver answers one request: a status, a status with headers and body, `"hang"` (never, until close)
 * or `"drop"` (the request was received, then the connection is cut with no answer); a promise of one answers
 * when it settles.
 */
export type Answer =
  | number
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: string }
  | "hang"
  | "drop";

/**
 * Starts a receiver on 127.0.0.1. `answer(n)` says how to answer the n-th request (0-based).
 *
 * @example
 * const slack = await startAlertReceiver(() => 200);
 */
export async function startAlertReceiver(
  answer: (n: number, request: Received) => Answer | Promise<Answer> = () => 200,
  path = "/services/T000/B000/tokenpart",
): Promise<AlertReceiver> {
  const received: Received[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const reply = (how: Answer) => {
      if (how === "hang") hanging.push(res);
      else if (how === "drop") req.socket.destroy();
      else if (typeof how === "number") {
        res.writeHead(how, { "content-type": "text/plain" }).end(how < 300 ? "ok" : "no");
      } else res.writeHead(how.status, { "content-type": "text/plain", ...how.headers }).end(how.body ?? "");
    };
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const n = received.length;
      const request = {
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      received.push(request);
      void Promise.resolve(answer(n, request)).then(reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    bodies: () => received.map((r) => JSON.parse(r.body) as unknown),
    close: () =>
      new Promise((resolve) => {
        for (const res of hanging) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A Standard Webhooks alert payload. */
export interface AlertPayload {
  type: "alert.firing" | "alert.resolved";
  timestamp: string;
  data: {
    rule: string;
    source: string;
    value: number;
    threshold: number;
    since: string;
    episode: number;
    summary: string;
  };
}

/**
 * Verifies a request with the `standardwebhooks` package (code we did not write) and returns its payload; throws
 * when the signature does not verify.
 */
export function verifiedAlert(secret: string, request: Received): AlertPayload {
  const headers = Object.fromEntries(
    ["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [
      h,
      String(request.headers[h] ?? ""),
    ]),
  );
  return new Webhook(secret).verify(request.body, headers) as AlertPayload;
}
