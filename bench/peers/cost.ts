// What each feature of `hookledger serve`'s ingest path costs (bench/cost.ts): the receiver assembled as `serve`
// assembles it (src/service.ts: metrics and statistics observers, the in-memory confirmed-duplicate cache, the
// info logger, an ingest pool), mounted with `createNodeHandler`, with the one feature BENCH_WITHOUT names taken out.
// Bench-only: the product has no switch for any of these.
//   none     nothing taken out: `serve`'s path
//   verify   the Stripe signature is not checked (the body is parsed as it would be)
//   parse    no JSON.parse: id, type, created and the entity scanned out of the bench's fixed body layout
//   claim    no database: a stand-in for the ingest pool answers every batch as inserted
//   stats    no statistics observer (the per-minute counts in delivery_stats_minute)
//   metrics  no metrics observer (prom-client's delivery counts and claim histogram)
//   logs     a silent logger instead of the info `delivery received` line
//   cache    no confirmed-duplicate cache (nothing looked up or added)
import { createServer } from "node:http";
import {
  createLogger,
  createMetrics,
  createNodeHandler,
  createPool,
  createReceiver,
  createStatsObserver,
  type EdgeObserver,
  layeredSeenCache,
  ledgerContext,
  memorySeenCache,
  migrate,
  type ParseResult,
  type Provider,
  silentLogger,
  stripeProvider,
} from "hookledger";
import { listenPeer, required } from "./http-peer.js";

/** The features bench/cost.ts takes out one at a time. */
export const WITHOUT = ["none", "verify", "parse", "claim", "stats", "metrics", "logs", "cache"] as const;

const without = required("BENCH_WITHOUT");
if (!(WITHOUT as readonly string[]).includes(without))
  throw new Error(`BENCH_WITHOUT must be one of ${WITHOUT.join(", ")}`);
const url = required("DATABASE_URL");
const schema = required("BENCH_SCHEMA");
const ledger = ledgerContext(schema);
const admin = createPool({ connectionString: url, role: "admin", max: 2 });
await migrate(admin, schema);
const ingest = createPool({ connectionString: url, role: "ingest" });
const log = without === "logs" ? silentLogger() : createLogger();

// The value after `marker` up to the next `end`, in the bench's bodies (bench/lib/stripe.ts), which hold each once.
function scan(body: Buffer, marker: string, end: string, from = 0): [string, number] {
  const start = body.indexOf(marker, from) + marker.length;
  const stop = body.indexOf(end, start);
  return [body.toString("latin1", start, stop), stop];
}

function scanned(bytes: Uint8Array): ParseResult {
  const body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [id] = scan(body, '"id":"', '"');
  const [type] = scan(body, '"type":"', '"');
  const [created] = scan(body, '"created":', ",");
  const [entityId, at] = scan(body, '"object":{"id":"', '"');
  const [entityType] = scan(body, '"object":"', '"', at);
  const version = Number(created);
  return {
    ok: true,
    event: {
      dedupeKey: id,
      type,
      payload: {},
      payloadIsBody: true,
      dedupeOnBodyHash: false,
      occurredAt: new Date(version * 1000),
      entity: { type: entityType, id: entityId, version },
    },
  };
}

function provider(): Provider {
  const stripe = stripeProvider();
  const steps = stripe.steps;
  if (!steps) throw new Error("the Stripe provider has lost its steps");
  const parse = without === "parse" ? scanned : steps.parse;
  const authenticate: typeof steps.authenticate =
    without === "verify" ? () => ({ ok: true, secretIndex: 0 }) : steps.authenticate;
  return {
    name: "stripe",
    verify: (input) => {
      const checked = authenticate(input);
      if (!checked.ok) return checked;
      const parsed = parse(input.body);
      return parsed.ok ? { ok: true, secretIndex: checked.secretIndex, event: parsed.event } : parsed;
    },
    steps: { authenticate, parse },
  };
}

// Answers the batched claim (its values: sources, then dedupe keys) as if every row were inserted; anything else
// (the workers' wake-up) with no rows.
const noDatabase: Parameters<typeof createReceiver>[0]["db"] = {
  async query<R extends object>(query: string | { readonly values?: unknown[] }) {
    const values = typeof query === "string" ? undefined : query.values;
    const [sources, keys] = (values ?? []) as [string[]?, string[]?];
    const rows = (keys ?? []).map((key, i) => ({ source: sources?.[i], dedupe_key: key }));
    return { rows: rows as unknown as R[], rowCount: rows.length };
  },
};

const metrics = createMetrics();
const stats = createStatsObserver({ db: admin, ledger, log });
const list: EdgeObserver[] = [
  ...(without === "metrics" ? [] : [metrics.observer]),
  ...(without === "stats" ? [] : [stats]),
];
const receiver = createReceiver({
  sources: [
    {
      name: "stripe",
      provider: provider(),
      secrets: [required("BENCH_STRIPE_SECRET")],
      maxBodyBytes: 1_048_576,
    },
  ],
  db: without === "claim" ? noDatabase : ingest,
  ledger,
  log,
  observer: {
    delivery(report) {
      for (const o of list) o.delivery(report);
    },
  },
  ...(without !== "cache" && { seen: layeredSeenCache(memorySeenCache()) }),
});
const server = createServer(createNodeHandler(receiver));
await listenPeer(server, () => Promise.all([stats.close(), admin.end(), ingest.end()]));
