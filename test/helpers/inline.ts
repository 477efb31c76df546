import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Source } from "hookledger";
import { createNodeGuard, type NodeGuardedHandler, type NodeGuardOptions } from "hookledger";
import type { InlineGuard } from "hookledger";
import { silentLogger } from "hookledger";
import { githubProvider } from "hookledger";
import { stripeProvider } from "hookledger";
import { GITHUB_SECRET, STRIPE_CAP, STRIPE_SECRETS } from "./http.js";

/** The sources of the HTTP contract tests (stripe capped at 4096 bytes, github), for an inline guard. */
export function inlineSources(): Source[] {
  return [
    { name: "stripe", provider: stripeProvider(), secrets: STRIPE_SECRETS, maxBodyBytes: STRIPE_CAP },
    { name: "github", provider: githubProvider(), secrets: [GITHUB_SECRET], maxBodyBytes: 1_048_576 },
  ];
}

/**
 * A node:http server running `handler` behind the guard on `/webhooks/:source`; `before` may read the request
 * first (a body parser). `close` ends every connection.
 */
export async function serveInline(
  guard: InlineGuard,
  handler: NodeGuardedHandler,
  options: NodeGuardOptions & { before?: (req: IncomingMessage) => Promise<void> } = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const { before, ...nodeOptions } = options;
  const middleware = createNodeGuard(guard, handler, { log: silentLogger(), ...nodeOptions });
  const server = createServer((req, res) => {
    if (!before) return middleware(req, res);
    before(req).then(() => middleware(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
