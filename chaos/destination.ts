import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { FORWARD_SECRET } from "./app-config.js";

/** A forwarded event the destination applied, in the order it applied them. */
export interface Forwarded {
  readonly eventId: string;
  readonly entity: string;
  readonly version: number;
}

/** What the outbound destination saw, for the oracle: each message applied at most once per idempotency key. */
export interface DestinationReport {
  readonly requests: number;
  readonly statuses: Readonly<Record<string, number>>;
  /** Per event id (the message's `event`), the idempotency keys the destination applied it under. */
  readonly applied: ReadonlyMap<string, ReadonlySet<string>>;
  /** The forwards applied, each `webhook-id` once, in the order they were applied. */
  readonly forwarded: readonly Forwarded[];
  /** Per event id, the `webhook-id`s its forwards were applied under. */
  readonly forwardKeys: ReadonlyMap<string, ReadonlySet<string>>;
}

/** The destination, running in the driver's process (never killed): its URLs and what it saw so far. */
export interface Destination {
  /** Where the outbox's messages go. */
  readonly url: string;
  /** Where the source's forwards go. */
  readonly forwardUrl: string;
  report(): DestinationReport;
  close(): Promise<void>;
}

/** What one request asks to apply: under which key, and what. */
type Request =
  | { readonly kind: "outbox"; readonly key: string; readonly event: string | undefined }
  | { readonly kind: "forward"; readonly key: string; readonly forwarded: Forwarded }
  | { readonly kind: "refused"; readonly why: string };

const webhook = new Webhook(FORWARD_SECRET);

// A forward carries the provider's Stripe event as it was received; its signature is checked with the official
// standardwebhooks package before anything is applied.
function read(url: string, headers: IncomingHttpHeaders, body: string): Request {
  if (url === "/forward") {
    try {
      webhook.verify(body, headers as Record<string, string>);
    } catch {
      return { kind: "refused", why: "401 bad signature" };
    }
    const event = JSON.parse(body) as { id: string; created: number; data: { object: { id: string } } };
    return {
      kind: "forward",
      key: String(headers["webhook-id"]),
      forwarded: { eventId: event.id, entity: event.data.object.id, version: event.created },
    };
  }
  const key = String(headers["idempotency-key"] ?? "");
  return { kind: "outbox", key, event: (JSON.parse(body || "{}") as { event?: string }).event };
}

/**
 * An outbound destination that applies each idempotency key (or `webhook-id`) once, as Stripe does, and misbehaves
 * as real ones do: one request in twelve is applied and then its connection is cut before the answer (the sender
 * cannot know it acted); during 5xx storms (0.7 s of every 5 s) every request gets 503 and is not applied; each
 * answer waits up to 20 ms, so kills and freezes find calls in flight. `random` is the run's seeded generator.
 */
export async function startDestination(random: () => number): Promise<Destination> {
  const applied = new Map<string, Set<string>>();
  const forwardKeys = new Map<string, Set<string>>();
  const forwarded: Forwarded[] = [];
  const keys = new Set<string>();
  const statuses: Record<string, number> = {};
  let requests = 0;
  const count = (what: string) => {
    statuses[what] = (statuses[what] ?? 0) + 1;
  };
  const under = (map: Map<string, Set<string>>, event: string, key: string) => {
    const set = map.get(event) ?? new Set<string>();
    set.add(key);
    map.set(event, set);
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests += 1;
      const asked = read(req.url ?? "", req.headers, Buffer.concat(chunks).toString("utf8"));
      setTimeout(() => {
        if (asked.kind === "refused") {
          count(asked.why);
          res.writeHead(401).end();
          return;
        }
        if (Date.now() % 5000 < 700) {
          count("503 storm");
          res.writeHead(503, { "retry-after": "0" }).end("storm");
          return;
        }
        if (asked.key !== "" && !keys.has(asked.key)) {
          if (asked.kind === "forward") {
            keys.add(asked.key);
            forwarded.push(asked.forwarded);
            under(forwardKeys, asked.forwarded.eventId, asked.key);
          } else if (asked.event !== undefined) {
            keys.add(asked.key);
            under(applied, asked.event, asked.key);
          }
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
    forwardUrl: `http://127.0.0.1:${port}/forward`,
    report: () => ({ requests, statuses: { ...statuses }, applied, forwarded, forwardKeys }),
    close: () =>
      new Promise((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}
