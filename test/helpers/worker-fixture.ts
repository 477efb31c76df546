import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createPool, Handlers, silentLogger, startWorker } from "hookledger";
import { type TestLedger, waitFor } from "./db.js";

const FIXTURE = fileURLToPath(new URL("../fixtures/worker-process.ts", import.meta.url));

/** A running test/fixtures/worker-process.ts. */
export interface WorkerFixture {
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything the process printed so far. */
  output(): string;
  /** Resolves once the process's handler printed that it is running event `id`. */
  inHandler(id: string): Promise<void>;
}

/**
 * Spawns the worker fixture on `t`'s ledger with `env` (FIXTURE_MODE and the rest, see the fixture) and adds it
 * to `children`, which the test file kills in its `after`.
 *
 * @example
 * const worker = spawnWorkerFixture(t, children, { FIXTURE_MODE: "hang" });
 * await worker.inHandler("evt_1");
 * worker.child.kill("SIGKILL");
 */
export function spawnWorkerFixture(
  t: TestLedger,
  children: ChildProcessWithoutNullStreams[],
  env: Readonly<Record<string, string>>,
): WorkerFixture {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE], {
    env: { ...process.env, HOOKLEDGER_TEST_DATABASE_URL: t.url, FIXTURE_SCHEMA: t.schema, ...env },
  });
  children.push(child);
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    out += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    exited,
    output: () => out,
    inHandler: (id: string) =>
      waitFor(
        `"in-handler ${id}" from the worker process`,
        async () => {
          if (child.exitCode !== null) throw new Error(`the worker process exited early:\n${out}`);
          return out.includes(`in-handler ${id}\n`);
        },
        60_000,
      ),
  };
}

/**
 * Runs a worker in this process on `t`'s ledger (two slots) whose handler writes each "kill" event into the test's
 * `applied` table as `survivor`, until `until` resolves (it should wait with a timeout), then stops it.
 *
 * @example
 * await withSurvivor(t, () => waitFor("settled", async () => (await rows()).every(settled), 60_000));
 */
export async function withSurvivor(
  t: TestLedger,
  until: () => Promise<void>,
  pollIntervalMs = 100,
): Promise<void> {
  const pool = createPool({ connectionString: t.url, role: "work", max: 3 });
  const worker = startWorker({
    pool,
    connectionString: t.url,
    ledger: t.ledger,
    handlers: new Handlers().on("kill", "*", async (ctx) => {
      await ctx.tx.query(`insert into "${t.schema}".applied (event_id, worker) values ($1, 'survivor')`, [
        ctx.event.id,
      ]);
    }),
    log: silentLogger(),
    concurrency: 2,
    pollIntervalMs,
  });
  try {
    await until();
  } finally {
    await worker.stop(10_000);
    await pool.end();
  }
}
