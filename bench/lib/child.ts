// The contenders' processes: spawned with an IPC channel (peers) or a stderr line to wait for (the hookledger CLI),
// logs to a file under bench/results/logs, and every live one remembered so an interrupted run stops them by pid.
import { type ChildProcess, spawn } from "node:child_process";
import { appendFileSync, closeSync, openSync } from "node:fs";
import { once } from "node:events";

const live = new Set<ChildProcess>();

/** How to start one process. */
export interface SpawnOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Where its stdout and stderr go (appended), besides stderr lines handed to `waitForLine`. */
  readonly logFile: string;
  /** Open a Node IPC channel (`process.send` in the child). */
  readonly ipc?: boolean;
}

/**
 * Spawns `command args` and remembers it until it exits.
 *
 * @example
 * const child = spawnChild(process.execPath, ["--import", "tsx", "bench/peers/naive.ts"], { logFile, ipc: true });
 */
export function spawnChild(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const log = openSync(options.logFile, "a");
  const child = spawn(command, args, {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", log, "pipe", ...(options.ipc ? (["ipc"] as const) : [])],
  });
  closeSync(log); // the child holds its own copy
  live.add(child);
  child.once("exit", () => live.delete(child));
  // stderr is piped (for waitForLine) and also kept in the log file.
  child.stderr?.on("data", (chunk: Buffer) => {
    try {
      appendFileSync(options.logFile, chunk);
    } catch {
      // the log is for diagnosis only
    }
  });
  return child;
}

/**
 * The next IPC message from `child` that `accept` takes; rejects if the child exits or `timeoutMs` passes first.
 *
 * @example
 * const ready = await nextMessage<{ phase: "ready"; url: string }>(child, (m) => m.phase === "ready", 30_000);
 */
export function nextMessage<T extends { phase: string }>(
  child: ChildProcess,
  accept: (message: T) => boolean,
  timeoutMs: number,
  what = "a message",
): Promise<T> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
    };
    const onMessage = (message: unknown) => {
      const m = message as T;
      if (m.phase === "error") {
        cleanup();
        reject(new Error(`${what}: the child reported ${(m as unknown as { error: string }).error}`));
      } else if (accept(m)) {
        cleanup();
        resolve(m);
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`${what}: the process exited (${signal ?? `code ${code}`}) first`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on("message", onMessage);
    child.once("exit", onExit);
  });
}

/**
 * The first match of `pattern` in `child`'s stderr; rejects if it exits or `timeoutMs` passes first.
 *
 * @example
 * const [, url] = await waitForLine(serve, /hookledger listening on (\S+)/, 30_000);
 */
export function waitForLine(
  child: ChildProcess,
  pattern: RegExp,
  timeoutMs: number,
): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const cleanup = () => {
      clearTimeout(timer);
      child.stderr?.off("data", onData);
      child.off("exit", onExit);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match) {
        cleanup();
        resolve(match);
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(
        new Error(`exited (${signal ?? `code ${code}`}) before printing ${pattern}: ${seen.slice(-400)}`),
      );
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${pattern} on stderr within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stderr?.on("data", onData);
    child.once("exit", onExit);
  });
}

/**
 * Stops `child`: `signal`, then SIGKILL after `graceMs`; resolves once it has exited.
 *
 * @example
 * await stopChild(server, "SIGTERM", 10_000);
 */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Stops every child still running (an interrupted or failed run), each by its own pid.
 *
 * @example
 * process.once("SIGINT", () => void stopAllChildren());
 */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...live].map((child) => stopChild(child, "SIGTERM", 5_000)));
}
