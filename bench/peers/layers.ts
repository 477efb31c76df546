// The duplicate storm's path taken apart (bench/duplicate-layers.ts): one process per layer, each answering the same
// committed duplicates as `hookledger serve` does, with BENCH_LAYER saying how much of hookledger's path it runs.
//   raw           the HMAC floor's code (read the body, verify, answer), with hookledger's answer bytes
//   raw-deferred  the same, answered one microtask later (what an asynchronous answer costs by itself)
//   receive       the body read as the floor reads it, then `receiver.receive`
//   handler       `createNodeHandler(receiver)`, as `serve` mounts it
// Every layer claims the unique phase's events through `handler`, so each meets the duplicates in the same state;
// SIGUSR2 says the duplicates begin.
import { createServer, type IncomingHttpHeaders, type RequestListener, type ServerResponse } from "node:http";
import {
  createNodeHandler,
  createPool,
  createReceiver,
  type HeaderBag,
  layeredSeenCache,
  ledgerContext,
  memorySeenCache,
  migrate,
  silentLogger,
  stripeProvider,
} from "hookledger";
import { listenPeer, required } from "./http-peer.js";
import { verifyStripe } from "./stripe-verify.js";

const layer = required("BENCH_LAYER");
const secret = required("BENCH_STRIPE_SECRET");
const url = required("DATABASE_URL");
const schema = required("BENCH_SCHEMA");
const admin = createPool({ connectionString: url, role: "admin", max: 2 });
await migrate(admin, schema);
const ingest = createPool({ connectionString: url, role: "ingest" });
const receiver = createReceiver({
  sources: [{ name: "stripe", provider: stripeProvider(), secrets: [secret], maxBodyBytes: 1_048_576 }],
  db: ingest,
  ledger: ledgerContext(schema),
  log: silentLogger(),
  seen: layeredSeenCache(memorySeenCache()),
});

// What the node adapter hands `receive` (nodeHeaders, src/adapters/node/io.ts), rewritten here because the package
// keeps it internal and the bench uses only the public surface; it must stay the same, so that the `receive` layer
// pays what `handler` pays for its headers.
class Headers implements HeaderBag {
  constructor(private readonly headers: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const value = this.headers[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(", ") : value;
  }
  forEach(callback: (value: string, name: string) => void): void {
    for (const [name, value] of Object.entries(this.headers)) {
      if (value !== undefined) callback(Array.isArray(value) ? value.join(", ") : value, name);
    }
  }
}

// The answer `serve` gives a duplicate, byte for byte; the bench's bodies start with their id.
function answerRaw(body: Buffer, signature: string | string[] | undefined, res: ServerResponse): void {
  if (!verifyStripe(body, signature, secret)) {
    res.writeHead(401).end();
    return;
  }
  const start = body.indexOf('"id":"') + 6;
  const answer = `{"status":"duplicate","id":${JSON.stringify(body.toString("latin1", start, body.indexOf('"', start)))}}`;
  res
    .writeHead(200, {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(answer)),
    })
    .end(answer);
}

let duplicatesBegan = false;
process.on("SIGUSR2", () => {
  duplicatesBegan = true;
});

const rawRead: RequestListener = (req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const signature = req.headers["stripe-signature"];
    if (layer === "raw") return answerRaw(body, signature, res);
    if (layer === "raw-deferred") {
      queueMicrotask(() => answerRaw(body, signature, res));
      return;
    }
    const delivery = {
      method: req.method ?? "GET",
      source: "stripe",
      headers: new Headers(req.headers),
      body: [body],
    };
    receiver.receive(delivery).then((answer) => {
      const headers = { ...answer.headers, "content-length": String(Buffer.byteLength(answer.body)) };
      res.writeHead(answer.status, headers).end(answer.body);
    });
  });
};
const LAYERS = ["raw", "raw-deferred", "receive", "handler"];
if (!LAYERS.includes(layer)) throw new Error(`BENCH_LAYER must be one of ${LAYERS.join(", ")}`);
const handler = createNodeHandler(receiver);
const server = createServer(
  layer === "handler" ? handler : (req, res) => (duplicatesBegan ? rawRead(req, res) : handler(req, res)),
);
await listenPeer(server, () => Promise.all([admin.end(), ingest.end()]));
