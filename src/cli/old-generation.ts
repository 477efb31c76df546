import { setFlagsFromString } from "node:v8";
import { CliError } from "./errors.js";

// The environment variable that sets, or turns off (`0`), the growth cap of capOldGeneration.
const GROWING_VARIABLE = "HOOKLEDGER_HEAP_GROWING_PERCENT";

// The cap's default, in percent of what survived the last full collection (docs/benchmarks.md#memory).
const DEFAULT_GROWING_PERCENT = 30;

const FLAG = /--heap[-_]growing[-_]percent\b/;

/**
 * The V8 flag that caps how far the old generation may grow past what survived its last full collection, for a
 * long-running command, or undefined when nothing is to be done: the cap is off
 * (`HOOKLEDGER_HEAP_GROWING_PERCENT=0`), or node was started with its own `--heap-growing-percent`.
 *
 * @example
 * heapGrowingFlag({}, []); // "--heap-growing-percent=30"
 * heapGrowingFlag({ HOOKLEDGER_HEAP_GROWING_PERCENT: "0" }, []); // undefined
 */
export function heapGrowingFlag(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string | undefined {
  const raw = env[GROWING_VARIABLE];
  const percent = raw === undefined || raw.trim() === "" ? DEFAULT_GROWING_PERCENT : Number(raw);
  if (!Number.isInteger(percent) || percent < 0 || percent > 1000) {
    throw new CliError(
      `${GROWING_VARIABLE} must be a whole number of percent from 1 to 1000, or 0 to keep V8's own growth; got '${raw}'`,
      2,
    );
  }
  if (percent === 0 || execArgv.some((a) => FLAG.test(a))) return undefined;
  return `--heap-growing-percent=${percent}`;
}

/**
 * Caps the old generation's growth between full collections for the commands that run for days (`serve`,
 * `worker`). V8 otherwise lets it grow to up to 4 times what survived the last full collection, more the faster a
 * process allocates: under the bench's load `serve` (12–18 MB live after a full collection) let its old space reach
 * 24.7–39.3 MB, and 23.5–27.8 MB with 30 %; its peak RSS went from 125.3–160.1 to 124.1–133.3 MB (Node 20,
 * docs/benchmarks.md#the-old-generations-growth). Unlike the young generation's size, V8 reads
 * this flag at every full collection, so setting it in-process works on every Node version, with no restart.
 *
 * @example
 * capOldGeneration("serve");
 */
export function capOldGeneration(command: string): void {
  if (command !== "serve" && command !== "worker") return;
  const flag = heapGrowingFlag(process.env, process.execArgv);
  if (flag !== undefined) setFlagsFromString(flag);
}
