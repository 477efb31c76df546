// The HTTP contenders: the naive receiver, raw node:http + HMAC, and `hookledger serve --no-worker` (unique ingest,
// then the duplicate storm on the same server). Each server is a process of its own; bench/loadgen.ts drives it.
import { benchPgbouncer } from "../lib/pgbouncer.js";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { nextMessage, spawnChild, stopChild, waitForLine } from "../lib/child.js";
import { memoryMB } from "../lib/proc.js";
import { dropSchema, freshSchema } from "../lib/schemas.js";
import { answeredOk, benchSecret, loadRun, withProblems } from "./loadgen-run.js";
import type { Contender, RunContext, RunResult } from "./types.js";

/**
 * The table a naive receiver writes (pgbench inserts into the same shape).
 *
 * @example
 * await admin.query(naiveTableDdl(schema));
 */
export function naiveTableDdl(schema: string): string {
  return `create table ${schema}.webhook_events (
    id          text        primary key,
    type        text        not null,
    body        jsonb       not null,
    received_at timestamptz not null default now()
  )`;
}

/**
 * Starts a peer of bench/peers/ under tsx and waits for its URL.
 *
 * @example
 * const [server, url] = await startPeer(ctx, "raw-hmac.ts", { BENCH_STRIPE_SECRET: secret });
 */
export async function startPeer(
  ctx: RunContext,
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<[ChildProcess, string]> {
  const child = spawnChild(process.execPath, ["--import", "tsx", join(ctx.root, "bench", "peers", script)], {
    env: { ...env, DATABASE_URL: ctx.env.url },
    logFile: join(ctx.logDir, `${script.replace(/\.ts$/, "")}-r${ctx.round}.log`),
    ipc: true,
  });
  try {
    const ready = await nextMessage<{ phase: string; url: string }>(
      child,
      (m) => m.phase === "ready",
      60_000,
      script,
    );
    return [child, ready.url];
  } catch (error) {
    await stopChild(child);
    throw error;
  }
}

async function count(ctx: RunContext, table: string): Promise<number> {
  const { rows } = await ctx.admin.query<{ n: string }>(`select count(*) as n from ${table}`);
  return Number(rows[0]?.n);
}

const rss = (child: ChildProcess) => (child.pid === undefined ? undefined : memoryMB(child.pid, "VmHWM"));

/** How many unique bodies a unique-ingest window gets signed up front. */
const uniqueBodies = (ctx: RunContext) => ctx.env.prebuiltRate * (ctx.env.seconds + ctx.env.warmupSeconds);

/**
 * Unique ingest into a peer of bench/peers/ that writes `schema.table`, checked: one row per answer 200.
 *
 * @example
 * return await peerIngest(ctx, { name: "naive receiver", script: "naive.ts", schema, prefix: "evt_n", table });
 */
export async function peerIngest(
  ctx: RunContext,
  options: { name: string; script: string; schema: string; prefix: string; table: string },
): Promise<RunResult[]> {
  const secret = benchSecret();
  const [server, url] = await startPeer(ctx, options.script, {
    BENCH_SCHEMA: options.schema,
    BENCH_STRIPE_SECRET: secret,
  });
  try {
    const { run, load } = await loadRun(ctx, {
      name: options.name,
      url,
      path: "/webhooks/stripe",
      serverPid: server.pid as number,
      secret,
      mode: "unique",
      prefix: `${options.prefix}${ctx.round}`,
      count: uniqueBodies(ctx),
      expect: '"received":true',
      expectId: false,
    });
    const rows = await count(ctx, `${options.schema}.${options.table}`);
    const ok = answeredOk(load);
    return [
      withProblems(run, rows === ok ? [] : [`${rows} rows in the table for ${ok} answers 200`], {
        peakRssMB: rss(server),
      }),
    ];
  } finally {
    await stopChild(server);
  }
}

/**
 * The naive receiver (bench/peers/naive.ts): verify, parse, one insert per request, pool of 20.
 *
 * @example
 * const [row] = await naive.run(ctx);
 */
export const naive: Contender = {
  name: "naive",
  rows: [["naive receiver", "req/s"]],
  async run(ctx) {
    const schema = await freshSchema(ctx.admin, "naive");
    try {
      await ctx.admin.query(naiveTableDdl(schema));
      return await peerIngest(ctx, {
        name: "naive receiver",
        script: "naive.ts",
        schema,
        prefix: "evt_n",
        table: "webhook_events",
      });
    } finally {
      await dropSchema(ctx.admin, schema);
    }
  },
};

/**
 * node:http with the same HMAC check and nothing else (bench/peers/raw-hmac.ts): the duplicate storm's floor.
 *
 * @example
 * const [row] = await rawHmac.run(ctx);
 */
export const rawHmac: Contender = {
  name: "raw-hmac",
  rows: [["raw node:http + HMAC", "req/s"]],
  async run(ctx) {
    const secret = benchSecret();
    const [server, url] = await startPeer(ctx, "raw-hmac.ts", { BENCH_STRIPE_SECRET: secret });
    try {
      const { run } = await loadRun(ctx, {
        name: "raw node:http + HMAC",
        url,
        path: "/webhooks/stripe",
        serverPid: server.pid as number,
        secret,
        mode: "cycle",
        prefix: `evt_r${ctx.round}`,
        count: ctx.env.events,
        expect: '"received":true',
        expectId: false,
      });
      return [{ ...run, peakRssMB: rss(server) }];
    } finally {
      await stopChild(server);
    }
  },
};

/**
 * Starts the built CLI, `hookledger serve --no-worker`, on a fresh schema (its migrations create it), or on an
 * existing one; `worker: true` runs the worker in it too (the scale mode's steady phases).
 *
 * @example
 * const { server, url, schema, secret } = await startServe(ctx, "serve");
 */
export async function startServe(
  ctx: RunContext,
  tag: string,
  options: {
    readonly schema?: string;
    readonly worker?: boolean;
    readonly config?: string;
    readonly secret?: string;
    /** Set in the server's environment besides the bench's (a pooler's URL and mode). */
    readonly env?: Readonly<Record<string, string>>;
  } = {},
) {
  const schema = options.schema ?? (await freshSchema(ctx.admin, tag, false));
  const secret = options.secret ?? benchSecret();
  const server = spawnChild(
    process.execPath,
    [
      ...ctx.env.serveNodeFlags,
      join(ctx.root, "dist", "cli", "main.js"),
      "serve",
      ...(options.worker ? [] : ["--no-worker"]),
      "--port",
      "0",
      "--config",
      join(ctx.root, "bench", "peers", options.config ?? "hookledger.config.mjs"),
    ],
    {
      env: {
        DATABASE_URL: ctx.env.url,
        HOOKLEDGER_SCHEMA: schema,
        BENCH_STRIPE_SECRET: secret,
        ADMIN_PORT: "0",
        HOST: "127.0.0.1",
        ...options.env,
      },
      logFile: join(ctx.logDir, `hookledger-${tag}-r${ctx.round}.log`),
    },
  );
  try {
    const [, url] = await waitForLine(server, /hookledger listening on (\S+)/, 120_000);
    return { server, url: url as string, schema, secret };
  } catch (error) {
    await stopChild(server);
    if (options.schema === undefined) await dropSchema(ctx.admin, schema);
    throw error;
  }
}

/**
 * Unique ingest into a server that claims into `schema`'s ledger, checked (one ledger row per answer accepted), then
 * the duplicate storm: the same events again, every one a committed duplicate by then. Rows are named `<label>:
 * unique` and `<label>: duplicate storm`. `ledger: false` is a server that writes nothing (bench/cost.ts without
 * the claim): its unique run alone, unchecked.
 *
 * @example
 * return await ingestThenStorm(ctx, { label: "hookledger serve", server, url, schema, secret });
 */
export async function ingestThenStorm(
  ctx: RunContext,
  options: {
    readonly label: string;
    readonly server: ChildProcess;
    readonly url: string;
    readonly schema: string;
    readonly secret: string;
    readonly ledger?: boolean;
  },
): Promise<RunResult[]> {
  const { label, server, url, schema, secret } = options;
  const common = { url, path: "/webhooks/stripe", serverPid: server.pid as number, secret, expectId: true };
  const prefix = `evt_h${ctx.round}`;
  const events = `${schema}.events`;
  const unique = await loadRun(ctx, {
    ...common,
    name: `${label}: unique`,
    mode: "unique",
    prefix,
    count: uniqueBodies(ctx),
    expect: '"status":"accepted"',
  });
  if (options.ledger === false) return [{ ...unique.run, peakRssMB: rss(server) }];
  const claimed = await count(ctx, events);
  const accepted = answeredOk(unique.load);
  const results: RunResult[] = [
    withProblems(
      unique.run,
      claimed === accepted ? [] : [`${claimed} ledger rows for ${accepted} accepted`],
      {
        peakRssMB: rss(server),
      },
    ),
  ];
  // The freshest of the claimed events, re-sent over and over: all of them are committed duplicates by now.
  const cycle = Math.min(unique.load.sent, ctx.env.events);
  const duplicate = await loadRun(ctx, {
    ...common,
    name: `${label}: duplicate storm`,
    mode: "cycle",
    prefix,
    count: cycle,
    offset: unique.load.sent - cycle,
    expect: '"status":"duplicate"',
  });
  const after = await count(ctx, events);
  results.push(
    withProblems(duplicate.run, after === claimed ? [] : [`ledger rows went from ${claimed} to ${after}`], {
      peakRssMB: rss(server),
      notes: [...duplicate.run.notes, `cycling over ${cycle} claimed events`],
    }),
  );
  return results;
}

/**
 * `hookledger serve --no-worker`: unique ingest, then the same events again (the duplicate storm).
 *
 * @example
 * const [unique, duplicate] = await hookledgerServe.run(ctx);
 */
export const hookledgerServe: Contender = serveContender(false);
/**
 * `hookledger serve` through PgBouncer in transaction mode (`HOOKLEDGER_DATABASE_POOLER=transaction`), the same
 * two runs, against `hookledger-serve` straight to Postgres.
 *
 * @example
 * const [unique, duplicate] = await hookledgerServePgbouncer.run(ctx);
 */
export const hookledgerServePgbouncer: Contender = serveContender(true);

function serveContender(viaPgbouncer: boolean): Contender {
  const label = viaPgbouncer ? "hookledger serve via PgBouncer" : "hookledger serve";
  return {
    name: viaPgbouncer ? "hookledger-serve-pgbouncer" : "hookledger-serve",
    rows: [
      [`${label}: unique`, "req/s"],
      [`${label}: duplicate storm`, "req/s"],
    ],
    async run(ctx) {
      const bouncer = viaPgbouncer ? await benchPgbouncer(ctx) : undefined;
      try {
        const { server, url, schema, secret } = await startServe(
          ctx,
          viaPgbouncer ? "serve-pgbouncer" : "serve",
          {
            ...(bouncer && { env: { DATABASE_URL: bouncer.url, HOOKLEDGER_DATABASE_POOLER: "transaction" } }),
          },
        );
        try {
          return await ingestThenStorm(ctx, { label, server, url, schema, secret });
        } finally {
          await stopChild(server);
          await dropSchema(ctx.admin, schema);
        }
      } finally {
        await bouncer?.stop();
      }
    },
  };
}
