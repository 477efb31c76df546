import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { join } from "node:path";

/** One hookledger process the suite runs: a receiver (`serve --no-worker`) or a worker. */
export interface Member {
  readonly role: "receiver" | "worker";
  readonly index: number;
  /** The webhook URL of a receiver. */
  readonly url?: string;
  child: ChildProcess;
  /** Starts of this member so far (1 before any restart). */
  starts: number;
  frozen: boolean;
  /** Killed and not yet restarted. */
  down: boolean;
}

export interface FleetOptions {
  readonly bin: string;
  readonly config: string;
  readonly databaseUrl: string;
  readonly logDir: string;
  readonly receivers: readonly number[];
  readonly workers: number;
}

/** The receivers and workers, started, killed and restarted as real processes. */
export class Fleet {
  readonly members: Member[] = [];
  private readonly logs: WriteStream[] = [];
  /** Every process ever spawned, so that stop() leaves none behind whatever the bookkeeping says. */
  private readonly spawned = new Set<ChildProcess>();
  private closed = false;

  constructor(private readonly options: FleetOptions) {}

  /** Starts every member and resolves once each said it is ready. */
  async start(): Promise<void> {
    this.options.receivers.forEach((port, index) => {
      this.members.push(this.spawnMember("receiver", index, `http://127.0.0.1:${port}/webhooks/`));
    });
    for (let index = 0; index < this.options.workers; index++) {
      this.members.push(this.spawnMember("worker", index));
    }
    await Promise.all(
      this.members.map((m) => ready(m.child, m.role === "receiver" ? /listening on/ : /ready/)),
    );
  }

  receivers(): Member[] {
    return this.members.filter((m) => m.role === "receiver");
  }

  workers(): Member[] {
    return this.members.filter((m) => m.role === "worker");
  }

  /** kill -9, then a fresh process in its place after `downMs` (a receiver keeps its port). */
  async killAndRestart(member: Member, downMs: number): Promise<void> {
    if (member.down) return;
    member.down = true;
    member.child.kill("SIGKILL");
    await exited(member.child);
    member.frozen = false;
    await new Promise((r) => setTimeout(r, downMs));
    if (this.closed) return;
    const fresh = this.spawnMember(member.role, member.index, member.url);
    member.child = fresh.child;
    member.starts++;
    member.down = false;
  }

  /** SIGSTOP for `ms`, then SIGCONT: the worker keeps its connections, transactions and locks meanwhile. */
  async freeze(member: Member, ms: number): Promise<void> {
    const child = member.child;
    child.kill("SIGSTOP");
    member.frozen = true;
    await new Promise((r) => setTimeout(r, ms));
    if (member.child === child) {
      child.kill("SIGCONT");
      member.frozen = false;
    }
  }

  /** Kills every member (SIGCONT first, so a stopped one goes too) and waits until all have exited. */
  async stop(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [...this.spawned].map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill("SIGCONT");
        child.kill("SIGKILL");
        await exited(child);
      }),
    );
    await Promise.all(this.logs.map((log) => new Promise((r) => log.end(r))));
  }

  private spawnMember(role: Member["role"], index: number, url?: string): Member {
    const { bin, config, databaseUrl, logDir, receivers } = this.options;
    const args =
      role === "receiver" ? ["serve", "--no-worker", "--config", config] : ["worker", "--config", config];
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "warn" };
    if (role === "receiver") Object.assign(env, { PORT: String(receivers[index]), ADMIN_PORT: "0" });
    const child = spawn(process.execPath, [bin, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.spawned.add(child);
    const log = createWriteStream(join(logDir, `${role}-${index}.log`), { flags: "a" });
    this.logs.push(log);
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    return { role, index, ...(url !== undefined && { url }), child, starts: 1, frozen: false, down: false };
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once("exit", () => r()));
}

function ready(child: ChildProcess, pattern: RegExp, timeoutMs = 60_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`not ready in ${timeoutMs} ms:\n${seen}`)), timeoutMs);
    const onData = (d: Buffer) => {
      seen += d;
      if (pattern.test(seen)) {
        clearTimeout(timer);
        child.stderr?.off("data", onData);
        resolve();
      }
    };
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before it was ready:\n${seen}`));
    });
  });
}
