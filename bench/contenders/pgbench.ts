// pgbench from the installed PostgreSQL: the naive receiver's statement alone — one `insert … on conflict do
// nothing` of a 2 KB jsonb body under a unique key — at BENCH_CONNECTIONS clients, 2 threads, prepared statements.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnChild, stopChild } from "../lib/child.js";
import { CpuTracker } from "../lib/cpu.js";
import { childPids } from "../lib/proc.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { percentile } from "../lib/stats.js";
import { CREATED_BASE, stripeBody } from "../lib/stripe.js";
import { naiveTableDdl } from "./http.js";
import type { Contender, RunContext, RunResult } from "./types.js";

/**
 * The pgbench binary: the newest /usr/lib/postgresql/N/bin/pgbench, else one on PATH, else undefined.
 *
 * @example
 * const pgbench = findPgbench(); // "/usr/lib/postgresql/15/bin/pgbench"
 */
export function findPgbench(): string | undefined {
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(join(base, v, "bin", "pgbench")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions[0]) return join(base, versions[0], "bin", "pgbench");
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, "pgbench"))) return join(dir, "pgbench");
  }
  return undefined;
}

interface PgbenchRun {
  readonly processed: number;
  readonly failed: number;
  readonly tps: number;
  readonly latencyAvg: number;
  /** Per-transaction latencies in ms, from pgbench's --log files. */
  readonly latencies: number[];
  /** pgbench's own user + system CPU seconds (the shell's `times` after it exits). */
  readonly cpuSeconds: number;
  readonly output: string;
}

// pgbench opens all its clients at once; on a cluster whose max_connections other clients nearly fill (the default
// is 100), that fails with "too many clients": wait and try again a few times before calling the run failed.
async function runPgbench(
  ...args: Parameters<typeof runPgbenchOnce>
): Promise<PgbenchRun & { readonly retries: number }> {
  for (let retries = 0; ; retries++) {
    try {
      return { ...(await runPgbenchOnce(...args)), retries };
    } catch (error) {
      if (retries >= 5 || !/too many clients/.test((error as Error).message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5000));
    }
  }
}

async function runPgbenchOnce(
  ctx: RunContext,
  label: string,
  binary: string,
  script: string,
  seconds: number,
  body: string,
  logPrefix: string | undefined,
  onStart?: (pids: () => number[]) => Promise<void>,
): Promise<PgbenchRun> {
  const args = [
    "-n",
    "-M",
    "prepared",
    "-c",
    String(ctx.env.connections),
    "-j",
    "2",
    "-T",
    String(seconds),
    "-f",
    script,
    "-D",
    `body=${body}`,
    ...(logPrefix ? ["-l", `--log-prefix=${logPrefix}`] : []),
    ctx.env.url,
  ];
  // pgbench runs under a shell whose `times` then reports the CPU pgbench used (it is the shell's waited-for child).
  const logFile = join(ctx.logDir, `pgbench-${label}-r${ctx.round}.log`);
  rmSync(logFile, { force: true });
  if (logPrefix) {
    const dir = join(logPrefix, "..");
    for (const file of readdirSync(dir)) if (file.startsWith("pgbench_log")) rmSync(join(dir, file));
  }
  const shell = spawnChild(
    "/bin/sh",
    [
      "-c",
      'pgbench="$1"; shift; "$pgbench" "$@"; rc=$?; echo "@@times"; times; exit $rc',
      "sh",
      binary,
      ...args,
    ],
    { logFile },
  );
  let output = "";
  shell.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => shell.once("exit", resolve));
  try {
    if (onStart) await onStart(() => childPids(shell.pid as number));
    const code = await exited;
    if (code !== 0) throw new Error(`pgbench exited with ${code}: ${output.slice(-400)}`);
  } finally {
    await stopChild(shell);
  }
  const text = readFileSync(logFile, "utf8");
  const number = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
  const timesLines = text.slice(text.lastIndexOf("@@times")).split("\n");
  const children = (timesLines[2] ?? "").trim().split(/\s+/).map(minutesSeconds);
  const latencies: number[] = [];
  if (logPrefix) {
    const dir = join(logPrefix, "..");
    for (const file of readdirSync(dir)) {
      if (!file.startsWith("pgbench_log")) continue;
      for (const line of readFileSync(join(dir, file), "utf8").split("\n")) {
        const micros = line.split(" ")[2];
        if (micros) latencies.push(Number(micros) / 1000);
      }
    }
  }
  return {
    processed: number(/number of transactions actually processed: (\d+)/),
    failed: number(/number of failed transactions: (\d+)/) || 0,
    tps: number(/tps = ([\d.]+) \(without initial connection time\)/),
    latencyAvg: number(/latency average = ([\d.]+) ms/),
    latencies,
    cpuSeconds: (children[0] ?? 0) + (children[1] ?? 0),
    output: text,
  };
}

// `times` prints "0m1.234s": minutes and seconds.
function minutesSeconds(text: string): number {
  const match = /^(\d+)m([\d.]+)s$/.exec(text);
  return match ? Number(match[1]) * 60 + Number(match[2]) : 0;
}

/**
 * pgbench: the single-row `insert … on conflict do nothing` a naive receiver issues, without the receiver.
 *
 * @example
 * const [row] = await pgbench.run(ctx); // [] when pgbench is not installed
 */
export const pgbench: Contender = {
  name: "pgbench",
  rows: [["pgbench insert … on conflict", "tps"]],
  async run(ctx) {
    const binary = findPgbench();
    if (!binary) {
      console.log("  pgbench: not installed (no /usr/lib/postgresql/*/bin/pgbench, none on PATH): skipped");
      return [];
    }
    const schema = await freshSchema(ctx.admin, "pgbench");
    const work = await mkdtemp(join(tmpdir(), "hookledger-pgbench-"));
    let cpu: CpuTracker | undefined;
    try {
      await ctx.admin.query(naiveTableDdl(schema));
      await ctx.admin.query(`create sequence ${schema}.ids cache 64`);
      const script = join(work, "insert.sql");
      await writeFile(
        script,
        `insert into ${schema}.webhook_events (id, type, body)
  values ('evt_' || :client_id || '_' || nextval('${schema}.ids'), 'customer.subscription.updated', :body::jsonb)
  on conflict (id) do nothing;\n`,
      );
      const body = stripeBody(
        { id: "evt_pgbench", subscription: "sub_pgbench", created: CREATED_BASE, status: "active" },
        ctx.env.bodyBytes,
      );
      const warm =
        ctx.env.warmupSeconds > 0
          ? await runPgbench(ctx, "warmup", binary, script, ctx.env.warmupSeconds, body, undefined)
          : undefined;
      const logPrefix = join(work, "pgbench_log");
      const run = await runPgbench(
        ctx,
        "window",
        binary,
        script,
        ctx.env.seconds,
        body,
        logPrefix,
        async (pids) => {
          await cpu?.stop(); // a try that failed to connect
          // pgbench's backends exit with it: sample every 250 ms so at most that much of their CPU goes unseen.
          cpu = new CpuTracker(ctx.admin, pids, ctx.pgPort, 250);
          await cpu.start();
        },
      );
      const split = await cpu?.stop();
      const rows = Number(
        (await ctx.admin.query<{ n: string }>(`select count(*) as n from ${schema}.webhook_events`)).rows[0]
          ?.n,
      );
      const problems: string[] = [];
      if (!(run.processed > 0)) problems.push(`pgbench processed no transaction: ${run.output.slice(-300)}`);
      if (run.failed > 0) problems.push(`${run.failed} failed transactions`);
      const expected = run.processed + (warm?.processed ?? 0);
      if (rows !== expected) problems.push(`${rows} rows for ${expected} transactions`);
      const result: RunResult = {
        name: "pgbench insert … on conflict",
        round: ctx.round,
        unit: "tps",
        valid: problems.length === 0,
        problems,
        ops: run.processed,
        seconds: ctx.env.seconds,
        perSecond: run.tps,
        p50: percentile(run.latencies, 50),
        p99: percentile(run.latencies, 99),
        // No server process: pgbench is the client, counted as the load generator.
        ...(split && { cpu: { ...split, process: Number.NaN } }),
        loadgenCpu: run.cpuSeconds,
        notes: [
          `latency average ${run.latencyAvg} ms (pgbench)`,
          ...(run.retries > 0 ? [`started on try ${run.retries + 1} (too many clients before)`] : []),
        ],
      };
      return [result];
    } finally {
      cpu?.cancel();
      await rm(work, { recursive: true, force: true });
      await dropSchema(ctx.admin, schema);
    }
  },
};
