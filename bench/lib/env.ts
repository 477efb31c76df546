// The knobs of `npm run bench` (docs/benchmarks.md lists them), read once in bench/main.ts and handed down.

/** Everything a run is parameterised by. */
export interface BenchEnv {
  /** DATABASE_URL, else the test database the suites use. */
  readonly url: string;
  readonly urlFromEnv: boolean;
  /** BENCH_ROUNDS: each round runs every contender once, in an order rotated by the round's number. */
  readonly rounds: number;
  /** BENCH_SECONDS: the measured window of each HTTP contender and of pgbench. */
  readonly seconds: number;
  /** BENCH_WARMUP: seconds of load before each measured window, not counted. */
  readonly warmupSeconds: number;
  /** BENCH_CONNECTIONS: closed-loop connections of the load generator, and pgbench's clients. */
  readonly connections: number;
  /** BENCH_EVENTS: jobs of the worker contenders, and the set the duplicate storm and the HMAC floor cycle over. */
  readonly events: number;
  /** BENCH_ENTITIES: entities the worker contenders' events are spread over. */
  readonly entities: number;
  /** BENCH_BODY_BYTES: the size of every signed Stripe body. */
  readonly bodyBytes: number;
  /** BENCH_ONLY: contender names or prefixes (comma separated); unset runs all. */
  readonly only: readonly string[] | undefined;
  /** BENCH_SOAK: seconds of the opt-in RSS soak of `serve --no-worker`; 0 skips it. */
  readonly soakSeconds: number;
  /** BENCH_SOAK_RATE: the soak's request rate cap (req/s); 0 means as fast as the connections go. */
  readonly soakRate: number;
  /** BENCH_PREBUILT_RATE: unique bodies signed up front per second of a unique-ingest window. */
  readonly prebuiltRate: number;
  /** BENCH_STRICT=1: exit 1 when a target fails, not only when a run is invalid. */
  readonly strict: boolean;
  /** BENCH_SCALE=1: run the scale mode (docs/benchmarks.md, "Scale") instead of the rounds. */
  readonly scale: boolean;
  /** BENCH_SCALE_ROWS: settled rows the scale mode fills the ledger with. */
  readonly scaleRows: number;
  /** BENCH_SCALE_MINUTES: length of the scale mode's long-transaction phase. */
  readonly scaleMinutes: number;
  /** BENCH_SCALE_RATE: the scale mode's fixed ingest rate (req/s) in its steady phases. */
  readonly scaleRate: number;
  /** BENCH_SCALE_PHASES: which of the scale mode's phases run (`rounds`, `nxm`, `long`, `prune`; comma separated). */
  readonly scalePhases: ReadonlySet<ScalePhase>;
  /** BENCH_NXM_CELLS: the N×M phase's cells, receivers×workers (`1x1,4x4`); default every one of {1,2,4}². */
  readonly nxmCells: readonly (readonly [number, number])[];
  /** BENCH_NXM_RATES: the N×M phase's ingest rates, req/s, each run over every cell; 0 is as fast as it goes. */
  readonly nxmRates: readonly number[];
  /** BENCH_SERVE_NODE_FLAGS: node flags for `hookledger serve` alone (a deployment's memory settings). */
  readonly serveNodeFlags: readonly string[];
  /** BENCH_PRUNE_DUTY: the scale mode's prune `--duty` (unset: the CLI's default). */
  readonly pruneDuty: string | undefined;
  /** BENCH_PRUNE_BATCH: the scale mode's prune `--batch-size` (unset: the CLI's default). */
  readonly pruneBatch: string | undefined;
}

/** A phase of the scale mode (docs/benchmarks.md, "Scale"). */
export type ScalePhase = "rounds" | "nxm" | "long" | "prune";
const SCALE_PHASES: readonly ScalePhase[] = ["rounds", "nxm", "long", "prune"];

// The entries of a comma-separated knob, trimmed, empty ones left out.
function commaList(raw: string | undefined): string[] {
  return (raw ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function phases(raw: string | undefined): ReadonlySet<ScalePhase> {
  const names = commaList(raw);
  if (names.length === 0) return new Set(SCALE_PHASES);
  for (const name of names) {
    if (!(SCALE_PHASES as readonly string[]).includes(name))
      throw new Error(`BENCH_SCALE_PHASES: expected some of ${SCALE_PHASES.join(", ")}, got ${name}`);
  }
  return new Set(names as ScalePhase[]);
}

function cells(raw: string | undefined): (readonly [number, number])[] {
  const names = commaList(raw);
  if (names.length === 0) return [1, 2, 4].flatMap((r) => [1, 2, 4].map((w) => [r, w] as const));
  return names.map((name) => {
    const match = /^([1-9]\d*)x([1-9]\d*)$/.exec(name);
    if (!match) throw new Error(`BENCH_NXM_CELLS: expected receivers x workers such as 4x4, got ${name}`);
    return [Number(match[1]), Number(match[2])] as const;
  });
}

const DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/test";

function whole(environment: NodeJS.ProcessEnv, name: string, fallback: number, min = 1): number {
  const raw = environment[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`${name}: expected a whole number ≥ ${min}, got ${raw}`);
  return n;
}

/**
 * Reads the knobs from the environment, with the defaults of docs/benchmarks.md.
 *
 * @example
 * const env = benchEnv(process.env); // env.rounds === 3 unless BENCH_ROUNDS says otherwise
 */
export function benchEnv(environment: NodeJS.ProcessEnv): BenchEnv {
  const seconds = whole(environment, "BENCH_SECONDS", 10);
  const only = commaList(environment.BENCH_ONLY);
  return {
    url: environment.DATABASE_URL || DEFAULT_URL,
    urlFromEnv: Boolean(environment.DATABASE_URL),
    rounds: whole(environment, "BENCH_ROUNDS", 3),
    seconds,
    warmupSeconds: whole(environment, "BENCH_WARMUP", Math.max(1, Math.round(seconds / 5)), 0),
    connections: whole(environment, "BENCH_CONNECTIONS", 64),
    events: whole(environment, "BENCH_EVENTS", 20_000),
    entities: whole(environment, "BENCH_ENTITIES", 2_000),
    bodyBytes: whole(environment, "BENCH_BODY_BYTES", 2048, 600),
    only: only.length > 0 ? only : undefined,
    soakSeconds: whole(environment, "BENCH_SOAK", 0, 0),
    soakRate: whole(environment, "BENCH_SOAK_RATE", 2000, 0),
    prebuiltRate: whole(environment, "BENCH_PREBUILT_RATE", 12_000),
    strict: environment.BENCH_STRICT === "1",
    scale: environment.BENCH_SCALE === "1",
    scaleRows: whole(environment, "BENCH_SCALE_ROWS", 5_000_000),
    scaleMinutes: whole(environment, "BENCH_SCALE_MINUTES", 30),
    scaleRate: whole(environment, "BENCH_SCALE_RATE", 300),
    scalePhases: phases(environment.BENCH_SCALE_PHASES),
    nxmCells: cells(environment.BENCH_NXM_CELLS),
    nxmRates: commaList(
      environment.BENCH_NXM_RATES ?? `0,${whole(environment, "BENCH_SCALE_RATE", 300)}`,
    ).map((r) => {
      if (!/^\d+$/.test(r)) throw new Error(`BENCH_NXM_RATES: expected whole numbers ≥ 0, got ${r}`);
      return Number(r);
    }),
    serveNodeFlags: (environment.BENCH_SERVE_NODE_FLAGS ?? "").split(/\s+/).filter((f) => f !== ""),
    pruneDuty: environment.BENCH_PRUNE_DUTY || undefined,
    pruneBatch: environment.BENCH_PRUNE_BATCH || undefined,
  };
}

/**
 * Whether `name` is selected by BENCH_ONLY (every name when unset; an entry selects names it equals or prefixes).
 *
 * @example
 * selected(["hookledger-worker"], "hookledger-worker-c10"); // true
 */
export function selected(only: readonly string[] | undefined, name: string): boolean {
  return only === undefined || only.some((o) => name === o || name.startsWith(`${o}-`));
}

/**
 * The URL with its password hidden, for printing.
 *
 * @example
 * redact("postgres://u:secret@h/db"); // "postgres://u:***@h/db"
 */
export function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(unparseable URL)";
  }
}
