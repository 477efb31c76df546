import { createServer } from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago (for servers that cannot listen on port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
    server.on("error", reject);
  });
}

/**
 * A free port below Linux's ephemeral range (32768–60999), for a server another process starts later (an embedded
 * or a test's own Postgres). A port from {@link freePort} comes from that range, where any test's outgoing
 * connection or `listen(0)` may take it before the server binds it.
 */
export async function serverPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer()
        .once("error", () => resolve(false))
        .listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}
