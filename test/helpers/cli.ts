import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { after } from "node:test";
import { createPool } from "hookledger";
import { testDatabaseUrl } from "./db.js";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join, resolve } from "node:path";

/** The built binary, as users run it. */
export const BIN = resolve("dist/cli/main.js");

/** Runs the CLI to completion. */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; node?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(options.node ?? process.execPath, [BIN, ...args], {
      // A free admin port unless a test names one: the default (webhook port + 10000) may belong to another test.
      env: { ADMIN_PORT: "0", ...(options.env ?? process.env) },
      cwd: options.cwd,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("exit", (code) => done({ code, stdout, stderr }));
  });
}

/** A long-running CLI process (serve, worker) and what it printed so far. */
export interface RunningCli {
  readonly child: ChildProcessWithoutNullStreams;
  readonly output: () => string;
  /** What it wrote to stdout so far (the JSON log stream). */
  readonly stdout: () => string;
  /**
   * Resolves with the first stderr line matching `pattern`: status lines such as "hookledger listening on URL" go
   * to stderr, since stdout carries the JSON log stream.
   */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts the CLI in the background (under `node`, default this test's own). */
export function startCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; node?: string } = {},
): RunningCli {
  const child = spawn(options.node ?? process.execPath, [BIN, ...args], {
    // A free admin port unless a test names one: the default (webhook port + 10000) may belong to another test.
    env: { ADMIN_PORT: "0", ...(options.env ?? process.env) },
    cwd: options.cwd,
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => {
    out += d;
  });
  child.stderr.on("data", (d) => {
    err += d;
  });
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  return {
    child,
    output: () => out + err,
    stdout: () => out,
    async waitForLine(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const match = err.match(pattern);
        if (match) return match;
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no stderr line matching ${pattern}; output:\n${out}${err}`);
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Directories and ledger schemas a CLI test file creates, removed after the file's tests (register at top level).
 *
 * @example
 * const { dirs, schemas } = cleanupAfter();
 */
export function cleanupAfter(): { dirs: string[]; schemas: string[] } {
  const dirs: string[] = [];
  const schemas: string[] = [];
  after(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
    const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 1 });
    for (const s of schemas) await pool.query(`drop schema if exists "${s}" cascade`);
    await pool.end();
  });
  return { dirs, schemas };
}

/**
 * Writes `body` as hookledger.config.mjs in a new directory inside the package (so that its `import … from
 * "hookledger"` resolves to the package itself, Node's self-reference), listed in `dirs` for removal.
 *
 * @example
 * const file = await packageConfigFile(dirs, ".outbox-service-", CONFIG);
 */
export async function packageConfigFile(dirs: string[], prefix: string, body: string): Promise<string> {
  const dir = await mkdtemp(join(process.cwd(), prefix));
  dirs.push(dir);
  const file = join(dir, "hookledger.config.mjs");
  await writeFile(file, body);
  return file;
}
