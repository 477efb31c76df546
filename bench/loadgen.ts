// The load generator, a process of its own (spawned by bench/contenders/http.ts with an IPC channel) so that its CPU
// is not the server's: closed-loop, `connections` keep-alive connections (undici Pool, one request in flight on
// each), bodies built and signed before the clock starts. It warms up, then measures `seconds`, and reports
// requests completed in the window, latency percentiles, every answer's status, and its own CPU time.
//
// Protocol: the spec arrives in BENCH_LOADGEN (JSON); the process sends { phase: "ready" }, waits for "go", then
// sends { phase: "start" } and { phase: "stop" } at the window's edges (the parent samples the server's CPU then)
// and finally { phase: "result", … }.
import { performance } from "node:perf_hooks";
import { Pool } from "undici";
import { percentile } from "./lib/stats.js";
import { CREATED_BASE, stripeBody, stripeSignature, workerEvent } from "./lib/stripe.js";

/** What to send, where, and what answer to expect. */
export interface LoadgenSpec {
  readonly url: string;
  readonly path: string;
  readonly connections: number;
  readonly warmupSeconds: number;
  readonly seconds: number;
  readonly secret: string;
  readonly bodyBytes: number;
  /** Event ids are `${prefix}_${i}`. */
  readonly prefix: string;
  /** `unique`: i = 0, 1, 2 … never repeating; `cycle`: i = n mod `count` (the same `count` events again and again). */
  readonly mode: "unique" | "cycle";
  /** Bodies signed up front: the cycle's size, or how many unique ones (later ones are signed as they are sent). */
  readonly count: number;
  /** Cycle mode: the cycle is ids offset … offset + count - 1 (the freshest of an earlier unique run). */
  readonly offset?: number;
  /** A 200 answer must contain this, and the event's id too when `expectId`. */
  readonly expect: string;
  readonly expectId: boolean;
  /** At most this many requests per second (the soak); absent: as fast as the connections go. */
  readonly rate?: number;
  /** More servers: request i goes to `[url, ...urls][i mod n]`, the connections split between them. */
  readonly urls?: readonly string[];
  /** Unique mode: stop after this many requests, whatever the window's time. */
  readonly total?: number;
  /** The workers' events instead (`workerEvent(i, entities)`: many per entity, ids `evt_w_<i>`). */
  readonly entities?: number;
}

/** Counts of one part of the run (warm-up, window, drain). */
export interface AnswerCounts {
  readonly requests: number;
  readonly statuses: Record<string, number>;
  /** Answers that were not the expected 200 (any status, a wrong body, a connection error). */
  readonly unexpected: number;
}

/** What the load generator reports. */
export interface LoadgenResult {
  readonly phase: "result";
  readonly window: AnswerCounts & {
    readonly seconds: number;
    readonly perSecond: number;
    readonly p50: number;
    readonly p99: number;
    readonly max: number;
  };
  readonly warmup: AnswerCounts;
  readonly drain: AnswerCounts;
  /** Distinct unexpected answers, at most 5, with how often each came. */
  readonly samples: readonly { readonly answer: string; readonly count: number }[];
  /** Ids 0 … sent-1 were sent (unique mode: every one of them exactly once). */
  readonly sent: number;
  /** Bodies built and signed while the clock ran, because the pre-signed ones ran out. */
  readonly signedLive: number;
  /** The load generator's own user + system CPU seconds over the window. */
  readonly cpuSeconds: number;
  /** Share of the window its event loop was busy: near 1, the load generator is the limit. */
  readonly loopBusy: number;
}

interface Prepared {
  readonly id: string;
  readonly body: Buffer;
  readonly headers: Record<string, string>;
}

function prepare(spec: LoadgenSpec, i: number, timestamp: number): Prepared {
  const fields = spec.entities
    ? workerEvent(i, spec.entities, CREATED_BASE)
    : {
        id: `${spec.prefix}_${i}`,
        subscription: `sub_${spec.prefix}_${i}`,
        created: CREATED_BASE,
        status: "active",
      };
  const id = fields.id;
  const body = stripeBody(fields, spec.bodyBytes);
  return {
    id,
    body: Buffer.from(body),
    headers: {
      "content-type": "application/json",
      "user-agent": "hookledger-bench",
      "stripe-signature": stripeSignature(body, spec.secret, timestamp),
    },
  };
}

class Counter {
  requests = 0;
  unexpected = 0;
  readonly statuses: Record<string, number> = {};
  add(status: string, ok: boolean): void {
    this.requests++;
    if (!ok) this.unexpected++;
    this.statuses[status] = (this.statuses[status] ?? 0) + 1;
  }
  counts(): AnswerCounts {
    return { requests: this.requests, statuses: this.statuses, unexpected: this.unexpected };
  }
}

async function main(spec: LoadgenSpec): Promise<void> {
  const send = (message: object) =>
    new Promise<void>((resolve) => (process.send ? process.send(message, () => resolve()) : resolve()));
  const now = () => Math.floor(Date.now() / 1000);
  const offset = spec.mode === "cycle" ? (spec.offset ?? 0) : 0;
  const prepared = Array.from({ length: spec.count }, (_, i) => prepare(spec, offset + i, now()));
  const targets = [spec.url, ...(spec.urls ?? [])];
  const connections = Math.max(1, Math.round(spec.connections / targets.length));
  const pools = targets.map((url) => new Pool(url, { connections, pipelining: 1 }));
  await send({ phase: "ready", prebuilt: prepared.length });
  await new Promise<void>((resolve) => process.once("message", () => resolve()));

  let next = 0;
  let signedLive = 0;
  const delivery = (i: number): Prepared => {
    if (spec.mode === "cycle") return prepared[i % spec.count] as Prepared;
    if (i < prepared.length) return prepared[i] as Prepared;
    signedLive++;
    return prepare(spec, i, now());
  };
  const warmup = new Counter();
  const window = new Counter();
  const drain = new Counter();
  const latencies: number[] = [];
  const samples = new Map<string, number>();
  const began = performance.now();
  const windowStart = began + spec.warmupSeconds * 1000;
  const windowEnd = windowStart + spec.seconds * 1000;
  let cpuAtStart = process.cpuUsage();
  let loopAtStart = performance.eventLoopUtilization();
  let cpuSeconds = 0;
  let loopBusy = 0;
  let started = false;
  let stopped = false;
  // Each edge is marked once: by its timer, or by whoever notices first that the time has come (a busy event loop
  // runs timers late, and the lanes may finish before the stop timer ever fires).
  const markStart = () => {
    if (started) return;
    started = true;
    cpuAtStart = process.cpuUsage();
    loopAtStart = performance.eventLoopUtilization();
    void send({ phase: "start" });
  };
  const markStop = () => {
    if (stopped) return;
    markStart();
    stopped = true;
    const cpu = process.cpuUsage(cpuAtStart);
    cpuSeconds = (cpu.user + cpu.system) / 1e6;
    loopBusy = performance.eventLoopUtilization(loopAtStart).utilization;
    void send({ phase: "stop" });
  };
  const startTimer = setTimeout(markStart, windowStart - began);
  const stopTimer = setTimeout(markStop, windowEnd - began);

  const lane = async () => {
    for (;;) {
      if (spec.rate) {
        const due = began + (next * 1000) / spec.rate;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      if (performance.now() >= windowEnd || (spec.total !== undefined && next >= spec.total)) {
        markStop();
        return;
      }
      const i = next++;
      const d = delivery(i);
      const started = performance.now();
      let status: string;
      let answer: string | null;
      try {
        const response = await (pools[i % pools.length] as Pool).request({
          path: spec.path,
          method: "POST",
          headers: d.headers,
          body: d.body,
        });
        const text = await response.body.text();
        status = String(response.statusCode);
        const ok =
          response.statusCode === 200 &&
          text.includes(spec.expect) &&
          (!spec.expectId || text.includes(d.id));
        answer = ok ? null : `HTTP ${status} ${text.slice(0, 160).replaceAll(d.id, "<id>")}`;
      } catch (error) {
        status = "error";
        answer = `error: ${(error as Error).message}`;
      }
      const ended = performance.now();
      if (ended >= windowStart) markStart();
      const ok = answer === null;
      if (ended < windowStart) warmup.add(status, ok);
      else if (ended < windowEnd) {
        window.add(status, ok);
        latencies.push(ended - started);
      } else drain.add(status, ok);
      if (answer !== null) samples.set(answer, (samples.get(answer) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, lane));
  clearTimeout(startTimer);
  clearTimeout(stopTimer);
  markStop();
  await Promise.all(pools.map((pool) => pool.close()));
  const result: LoadgenResult = {
    phase: "result",
    window: {
      ...window.counts(),
      seconds: spec.seconds,
      perSecond: window.requests / spec.seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: percentile(latencies, 100),
    },
    warmup: warmup.counts(),
    drain: drain.counts(),
    samples: [...samples]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([answer, count]) => ({ answer, count })),
    sent: next,
    signedLive,
    cpuSeconds,
    loopBusy,
  };
  await send(result);
  process.disconnect?.();
}

const raw = process.env.BENCH_LOADGEN;
if (!raw) {
  console.error("bench/loadgen.ts is started by `npm run bench` (it reads its spec from BENCH_LOADGEN)");
  process.exitCode = 2;
} else {
  main(JSON.parse(raw) as LoadgenSpec).catch((error) => {
    console.error("loadgen failed:", error);
    process.send?.({ phase: "error", error: (error as Error).message });
    process.exitCode = 1;
  });
}
