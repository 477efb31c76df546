import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What the outbound destination saw, for the oracle: each message applied at most once per idempotency key. */
export interface DestinationReport {
  readonly requests: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Per event id (the message's `event`), the idempotency keys the destination applied it under. */
  readonly applied: ReadonlyMap<string, ReadonlySet<string>>;
}

/** The destination, running in the driver's process (never killed): its URL and what it saw so far. */
export interface Destination {
  readonly url: string;
  report(): DestinationReport;
  close(): Promise<void>;
}

/**
 * An outbound destination that applies each idempotency key once, as Stripe does, and misbehaves as real ones do:
 * one request in twelve is applied and then its connection is cut before the answer (the sender cannot know it
 * acted); during 5xx storms (0.7 s of every 5 s) every request gets 503 and is not applied; each answer waits up to
 * 20 ms, so kills and freezes find calls in flight. `random` is the run's seeded generator.
 */
export async function startDestination(random: () => number): Promise<Destination> {
  const applied = new Map<string, Set<string>>();
  const keys = new Set<string>();
  const statuses: Record<string, number> = {};
  let requests = 0;
  const count = (what: string) => {
    statuses[what] = (statuses[what] ?? 0) + 1;
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests += 1;
      const key = String(req.headers["idempotency-key"] ?? "");
      const event = (JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { event?: string }).event;
      setTimeout(() => {
        if (Date.now() % 5000 < 700) {
          count("503 storm");
          res.writeHead(503, { "retry-after": "0" }).end("storm");
          return;
        }
        if (key !== "" && event !== undefined && !keys.has(key)) {
          keys.add(key);
          const under = applied.get(event) ?? new Set<string>();
          under.add(key);
          applied.set(event, under);
        }
        if (random() < 1 / 12) {
          count("applied, then dropped");
          req.socket.destroy();
          return;
        }
        count("200");
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      }, random() * 20);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/apply`,
    report: () => ({ requests, statuses: { ...statuses }, applied }),
    close: () =>
      new Promise((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
