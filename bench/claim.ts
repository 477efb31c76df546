// `npm run bench`: the claim through the HTTP edge against the same claim issued directly through pg, in one run.
// Environment: DATABASE_URL, BENCH_OPS (20000), BENCH_CONCURRENCY (64), BENCH_WARMUP (ops / 20, at least 8 per lane).
import { randomBytes } from "node:crypto";
import { availableParallelism, cpus, loadavg } from "node:os";
import { Pool as HttpPool } from "undici";
import { resolveConfig } from "../src/config/validate.js";
import { createPool, quoteIdent } from "../src/db/pool.js";
import { claimEvent } from "../src/ledger/claim.js";
import { ledgerContext } from "../src/ledger/context.js";
import { notifyThrottle } from "../src/ledger/notify.js";
import { silentLogger } from "../src/log.js";
import { type Service, startService } from "../src/service.js";
import { BASE_HEADERS, type BenchEvent, buildEvents, signAll } from "./events.js";
import { type LoadRun, type OpResult, runLoad, type Summary, summarize } from "./load.js";

const DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/test";
const SOURCE = "stripe";
const BODY_BYTES = 2048;

type Expected = "accepted" | "duplicate";

async function cacheHits(): Promise<number> {
  const metric = service?.metrics.registry.getSingleMetric("hookledger_duplicate_cache_hits_total");
  const values = (await metric?.get())?.values ?? [];
  return values.reduce((sum, v) => sum + v.value, 0);
}

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${name}: expected a positive whole number, got ${raw}`);
  return n;
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparseable URL)";
  }
}

const envUrl = process.env.DATABASE_URL;
const url = envUrl || DEFAULT_URL;
const ops = positiveInt("BENCH_OPS", 20_000);
const concurrency = positiveInt("BENCH_CONCURRENCY", 64);
const warmup = positiveInt("BENCH_WARMUP", Math.max(concurrency * 8, Math.round(ops / 20)));
const schema = `bench_${randomBytes(4).toString("hex")}`;
const secret = `whsec_bench_${randomBytes(12).toString("hex")}`;
const ledger = ledgerContext(schema);
const log = silentLogger();

const admin = createPool({ connectionString: url, role: "admin", max: 2 });
// The baseline pool: the service's own pool factory and role, one connection per concurrent claim.
const direct = createPool({ connectionString: url, role: "ingest", max: concurrency });
const wakeups = notifyThrottle(direct, ledger, log);
let service: Service | undefined;
let http: HttpPool | undefined;

async function cleanup(): Promise<void> {
  const step = (what: string, p: Promise<unknown> | undefined) =>
    p?.catch((error) => console.error(`cleanup: ${what} failed: ${(error as Error).message}`));
  await step("closing the HTTP client", http?.close());
  await step("ending the baseline pool", direct.end());
  await step("stopping the service", service?.stop());
  await step("dropping the schema", admin.query(`drop schema if exists ${quoteIdent(schema)} cascade`));
  await step("ending the admin pool", admin.end());
}

const interrupted = new AbortController();
process.once("SIGINT", () => {
  console.error(`\ninterrupted: finishing in-flight operations, then dropping schema ${schema}`);
  interrupted.abort();
});

function expectClaim(event: BenchEvent, expected: Expected, got: { status: string; id: string }): OpResult {
  return got.status === expected && got.id === event.id ? null : `${got.status} ${got.id}`;
}

function baselineOp(events: readonly BenchEvent[], expected: Expected) {
  return async (i: number): Promise<OpResult> => {
    const event = events[i] as BenchEvent;
    // The same wake-up throttle as the edge, so both sides send the same statements (see ledger/notify.ts).
    const notify = wakeups.claimNotifies();
    const result = await claimEvent(direct, ledger, { ...event.claim, notify });
    if (!notify && result.status === "accepted") wakeups.committedQuietly();
    return expectClaim(event, expected, result);
  };
}

function httpOp(client: HttpPool, events: readonly BenchEvent[], expected: Expected) {
  // Signed now, before the clock starts; one timestamp for the phase keeps every signature inside the window.
  const signatures = signAll(events, secret);
  return async (i: number): Promise<OpResult> => {
    const event = events[i] as BenchEvent;
    const response = await client.request({
      path: `/webhooks/${SOURCE}`,
      method: "POST",
      headers: { ...BASE_HEADERS, "stripe-signature": signatures[i] as string },
      body: event.body,
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) return `HTTP ${response.statusCode} ${text.slice(0, 120)}`;
    try {
      return expectClaim(event, expected, JSON.parse(text) as { status: string; id: string });
    } catch {
      return `HTTP 200 with a body that is not JSON: ${text.slice(0, 120)}`;
    }
  };
}

interface Phase {
  readonly name: string;
  readonly summary: Summary;
  readonly run: LoadRun;
  readonly warmup: LoadRun;
  readonly baseline?: Phase;
}

async function phase(
  name: string,
  warm: readonly BenchEvent[],
  main: readonly BenchEvent[],
  op: (events: readonly BenchEvent[]) => (i: number) => Promise<OpResult>,
  baseline?: Phase,
): Promise<Phase> {
  process.stderr.write(`${name}: ${warm.length} warm-up + ${main.length} ops … `);
  const warmRun = await runLoad(warm.length, concurrency, op(warm), interrupted.signal);
  const run = await runLoad(main.length, concurrency, op(main), interrupted.signal);
  if (interrupted.signal.aborted) throw new Error("interrupted");
  const summary = summarize(run);
  process.stderr.write(`${summary.perSecond.toFixed(0)} req/s\n`);
  return { name, summary, run, warmup: warmRun, ...(baseline && { baseline }) };
}

async function countRows(prefix: string) {
  const { rows } = await admin.query<{ events: string; duplicate_rows: string; duplicate_count: string }>(
    `select (select count(*) from ${ledger.s}.events where starts_with(dedupe_key, $1::text)) as events,
            (select count(*) from ${ledger.s}.duplicates where starts_with(dedupe_key, $1::text)) as duplicate_rows,
            (select coalesce(sum(count), 0) from ${ledger.s}.duplicates where starts_with(dedupe_key, $1::text))
              as duplicate_count`,
    [prefix],
  );
  const row = rows[0];
  return {
    events: Number(row?.events),
    duplicateRows: Number(row?.duplicate_rows),
    duplicateCount: Number(row?.duplicate_count),
  };
}

const fmt = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : "-");
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a) ? `${(a / b).toFixed(2)}x` : "-");

function printTable(phases: readonly Phase[]) {
  const header = [
    "phase",
    "ops",
    "req/s",
    "p50 ms",
    "p99 ms",
    "loop busy",
    "req/s vs base",
    "p50 vs base",
    "p99 vs base",
  ];
  const rows = phases.map(({ name, summary: s, baseline }) => [
    name,
    String(s.ops),
    fmt(s.perSecond, 0),
    fmt(s.p50, 2),
    fmt(s.p99, 2),
    `${fmt(s.eventLoopBusy * 100, 0)} %`,
    baseline ? ratio(s.perSecond, baseline.summary.perSecond) : "",
    baseline ? ratio(s.p50, baseline.summary.p50) : "",
    baseline ? ratio(s.p99, baseline.summary.p99) : "",
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c] ?? 0) : cell.padStart(widths[c] ?? 0)))
      .join("  ");
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

async function main(): Promise<number> {
  const { rows } = await admin.query<{ version: string }>("select version()");
  const pgVersion = (rows[0]?.version ?? "unknown").split(" on ")[0];
  const loadBefore = loadavg()[0] ?? 0;

  process.stderr.write("building and parsing events … ");
  const events = (tag: string, n: number) => buildEvents(`evt_${tag}`, n, BODY_BYTES, SOURCE, secret);
  const warmDirect = events("wb", warmup);
  const warmHttp = events("wh", warmup);
  const directEvents = events("b", ops);
  const httpEvents = events("h", ops);
  process.stderr.write("done\n");

  service = await startService(
    resolveConfig({
      database: { url, schema },
      host: "127.0.0.1",
      port: 0,
      sources: [{ name: SOURCE, provider: "stripe", secrets: [secret] }],
    }),
    { log, serve: true, work: false },
  );
  http = new HttpPool(service.url as string, { connections: concurrency, pipelining: 1 });
  const client = http;

  const directOps = (expected: Expected) => (list: readonly BenchEvent[]) => baselineOp(list, expected);
  const httpOps = (expected: Expected) => (list: readonly BenchEvent[]) => httpOp(client, list, expected);
  const phases: Phase[] = [];
  const bu = await phase("baseline-unique", warmDirect, directEvents, directOps("accepted"));
  phases.push(bu);
  phases.push(await phase("http-unique", warmHttp, httpEvents, httpOps("accepted"), bu));
  // Backends whose last statement touched this run's schema: the baseline pool's and the service's ingest pool's.
  const ingestBackends = await admin.query<{ n: string }>(
    `select count(*) as n from pg_stat_activity
      where application_name = 'hookledger-ingest' and strpos(query, $1::text) > 0`,
    [ledger.s],
  );
  const serviceIngest = Number(ingestBackends.rows[0]?.n ?? 0) - direct.totalCount;
  const bd = await phase("baseline-duplicate", warmDirect, directEvents, directOps("duplicate"));
  phases.push(bd);
  phases.push(await phase("http-duplicate", warmHttp, httpEvents, httpOps("duplicate"), bd));

  console.log(
    "hookledger bench: the claim through the HTTP edge vs. the same claimEvent() issued directly via pg",
  );
  console.log(
    `database  ${redact(url)} (${envUrl ? "from DATABASE_URL" : "default; set DATABASE_URL to change"}), schema ${schema} (dropped at the end)`,
  );
  console.log(
    `versions  node ${process.version}, ${pgVersion}; ${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? "?"}), load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] ?? 0).toFixed(1)} after`,
  );
  console.log(
    `load      ${ops} ops per phase after ${warmup} warm-up ops, ${concurrency} concurrent, signed Stripe events of ${BODY_BYTES} bytes`,
  );
  console.log(
    `service   serve only (worker off, so the edge alone is measured), in this process; HTTP through undici Pool (${concurrency} connections, pipelining 1)`,
  );
  console.log(
    "cache     as deployed, the service answers duplicates it knows committed from its in-process cache; the baseline always asks Postgres",
  );
  console.log(
    `pools     baseline: createPool({ role: "ingest", max: ${concurrency} }); service ingest pool: ${serviceIngest} connections open after http-unique`,
  );
  console.log("");
  printTable(phases);
  console.log("");

  let failures = 0;
  for (const p of phases) {
    for (const [label, run] of [
      ["warm-up", p.warmup],
      ["run", p.run],
    ] as const) {
      if (run.unexpected.length === 0) continue;
      failures += run.unexpected.length;
      const kinds = new Map<string, number>();
      for (const u of run.unexpected) {
        const kind = u.got.replace(/evt_\w+/g, "evt_…");
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      console.log(`unexpected  ${p.name} ${label}: ${run.unexpected.length} of ${run.ops}`);
      for (const [kind, n] of kinds) console.log(`            ${n} × ${kind}`);
    }
  }
  for (const [tag, name] of [
    ["b", "baseline"],
    ["h", "http"],
  ] as const) {
    const c = await countRows(`evt_${tag}_`);
    // The service answers a duplicate it knows committed from its duplicate cache, without the database; its hits
    // include the duplicate phase's warm-up, whose ids are therefore counted on both sides.
    const cached = tag === "h" ? await cacheHits() : 0;
    const warmCounted = tag === "h" ? (await countRows("evt_wh_")).duplicateCount : 0;
    const expected = tag === "h" ? ops + warmup : ops;
    const ok = c.events === ops && c.duplicateCount + warmCounted + cached === expected;
    if (!ok) failures++;
    console.log(
      `verify      ${name}: ${c.events} ledger rows (expected ${ops}), duplicates: ${c.duplicateCount + warmCounted} counted in the ledger + ${cached} answered from the duplicate cache (expected ${expected}, warm-up included) ${ok ? "ok" : "MISMATCH"}`,
    );
  }
  console.log(
    failures === 0
      ? "verify      ok: unique phases all accepted, duplicate phases all duplicate, ledger counts exact"
      : `verify      FAILED: ${failures} unexpected answers or count mismatches (above)`,
  );
  console.log("");
  console.log(
    "loop busy   share of each phase this process's event loop was busy (load generator, and in http phases the service too).",
  );
  console.log(
    "note        absolute numbers depend on this machine (bench, service and Postgres share it); read the ratios, measured in the same run.",
  );
  return failures === 0 ? 0 : 1;
}

try {
  process.exitCode = await main();
} catch (error) {
  if (!interrupted.signal.aborted) console.error("bench failed:", error);
  process.exitCode = interrupted.signal.aborted ? 130 : 1;
} finally {
  await cleanup();
}
