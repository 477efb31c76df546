// What the two hand-written peers share: a node:http server on 127.0.0.1 that reads the whole body, checks the
// Stripe signature, and hands verified bodies to `handle`; it reports its URL over IPC and stops on SIGTERM.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyStripe } from "./stripe-verify.js";

/**
 * Serves `POST /webhooks/stripe` until SIGTERM; `handle` answers each verified body, `close` runs at the end.
 *
 * @example
 * await servePeer(secret, async (body, res) => res.end('{"received":true}'), async () => {});
 */
export async function servePeer(
  secret: string,
  handle: (body: Buffer, res: ServerResponse) => Promise<void> | void,
  close: () => Promise<void>,
): Promise<void> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.method !== "POST" || req.url !== "/webhooks/stripe") {
        res.writeHead(404).end();
      } else if (!verifyStripe(body, req.headers["stripe-signature"], secret)) {
        res.writeHead(400, { "content-type": "application/json" }).end('{"error":"bad signature"}');
      } else {
        Promise.resolve(handle(body, res)).catch((error: Error) => {
          console.error(`request failed: ${error.message}`);
          if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
          res.end('{"error":"internal"}');
        });
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  process.send?.({ phase: "ready", url: `http://127.0.0.1:${port}` });
  process.once("SIGTERM", () => {
    server.close();
    server.closeAllConnections();
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

/**
 * An environment variable the contender must set.
 *
 * @example
 * const secret = required("BENCH_STRIPE_SECRET");
 */
export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (this process is started by npm run bench)`);
  return value;
}

/**
 * Listens on 127.0.0.1, reports the URL over IPC, and on SIGTERM closes the server, runs `close`, and exits.
 *
 * @example
 * await listenPeer(createServer(handler), () => Promise.all([pool.end()]));
 */
export async function listenPeer(server: Server, close: () => Promise<unknown>): Promise<void> {
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  process.send?.({ phase: "ready", url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
  process.once("SIGTERM", () => {
    server.close();
    server.closeAllConnections();
    close().finally(() => process.exit(0));
  });
}
