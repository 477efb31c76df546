import { CliError } from "./errors.js";

// The environment variable that sets, or turns off (`0`), the cap of capYoungGeneration.
const SEMI_SPACE_VARIABLE = "HOOKLEDGER_SEMI_SPACE_MB";

// The cap's default, in MB per semi-space (docs/benchmarks.md#memory).
const DEFAULT_SEMI_SPACE_MB = 8;

const FLAG = /--max[-_]semi[-_]space[-_]size\b/;

/**
 * The node flag that caps V8's young generation for a long-running command, or undefined when nothing is to be
 * done: the cap is off (`HOOKLEDGER_SEMI_SPACE_MB=0`), or the process was started with its own semi-space size
 * (on node's command line or in `NODE_OPTIONS`), which is left as it is.
 *
 * @example
 * semiSpaceFlag({}, [], undefined); // "--max-semi-space-size=8"
 * semiSpaceFlag({ HOOKLEDGER_SEMI_SPACE_MB: "0" }, [], undefined); // undefined
 */
export function semiSpaceFlag(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
  nodeOptions: string | undefined,
): string | undefined {
  const raw = env[SEMI_SPACE_VARIABLE];
  const mb = raw === undefined || raw.trim() === "" ? DEFAULT_SEMI_SPACE_MB : Number(raw);
  if (!Number.isInteger(mb) || mb < 0 || mb > 1024) {
    throw new CliError(
      `${SEMI_SPACE_VARIABLE} must be a whole number of MB from 1 to 1024, or 0 to keep node's default; got '${raw}'`,
      2,
    );
  }
  if (mb === 0) return undefined;
  if (execArgv.some((a) => FLAG.test(a)) || FLAG.test(nodeOptions ?? "")) return undefined;
  return `--max-semi-space-size=${mb}`;
}

type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/**
 * Restarts this process in place (same pid, same stdio, nothing opened yet) with V8's young generation capped, for
 * the commands that run for days (`serve`, `worker`). Node 24 sizes each of the young generation's two semi-spaces
 * at up to 64 MB by default (Node 20 and 22: 16 MB), and V8 reads the size only at start: under the bench's load
 * `serve` then held 266–290 MB resident, and 172–194 MB with 8 MB semi-spaces at the same request rate (Node 24.21,
 * docs/benchmarks.md#memory). `process.execve` exists from Node 22.15; on Node 20, on Windows and
 * in a process started with an IPC channel nothing happens (set `NODE_OPTIONS=--max-semi-space-size=8` there).
 *
 * @example
 * capYoungGeneration("serve"); // returns only when there is nothing to do
 */
export function capYoungGeneration(command: string): void {
  if (command !== "serve" && command !== "worker") return;
  const flag = semiSpaceFlag(process.env, process.execArgv, process.env.NODE_OPTIONS);
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (flag === undefined || typeof execve !== "function" || process.platform === "win32") return;
  // execve keeps only stdin, stdout and stderr: a parent's IPC channel (child_process.fork, pm2's fork mode) or a
  // cluster primary's would be lost.
  if (process.channel !== undefined || process.env.NODE_CHANNEL_FD !== undefined) return;
  if (process.env.NODE_UNIQUE_ID !== undefined) return;
  const [, script, ...args] = process.argv;
  if (script === undefined) return;
  execve.call(
    process,
    process.execPath,
    [process.execPath, flag, ...process.execArgv, script, ...args],
    process.env,
  );
}
