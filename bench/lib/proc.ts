// What Linux's /proc says about a process: CPU time, memory, and which TCP ports it holds (to find its Postgres
// backends). Reads only; a process that has exited reads as undefined.
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * User + system CPU seconds a live process has used so far (/proc/<pid>/stat utime + stime).
 *
 * @example
 * const before = cpuSeconds(child.pid); // … later: cpuSeconds(child.pid) - before
 */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which may itself contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the whole line, i.e. 12 and 13 after "pid (comm) ".
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/**
 * A line of /proc/<pid>/status in megabytes: `VmHWM` (peak resident set) or `VmRSS` (resident now).
 *
 * @example
 * memoryMB(server.pid, "VmHWM"); // 96.4
 */
export function memoryMB(pid: number, field: "VmHWM" | "VmRSS"): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The local ports of `pid`'s TCP connections to `remotePort`: matched against `pg_stat_activity.client_port`, they
 * name the Postgres backends serving that process.
 *
 * @example
 * const ports = connectionPorts(server.pid, 5432);
 */
export function connectionPorts(pid: number, remotePort: number): number[] {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (target.startsWith("socket:[")) inodes.add(target.slice(8, -1));
      } catch {
        // closed between the listing and the readlink
      }
    }
  } catch {
    return [];
  }
  const ports: number[] = [];
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      const local = cols[1];
      const remote = cols[2];
      const inode = cols[9];
      if (!local || !remote || !inode || !inodes.has(inode)) continue;
      if (Number.parseInt(remote.split(":")[1] ?? "", 16) !== remotePort) continue;
      ports.push(Number.parseInt(local.split(":")[1] ?? "", 16));
    }
  }
  return ports;
}

/**
 * The direct children of `pid` (/proc/<pid>/task/<pid>/children).
 *
 * @example
 * childPids(shell.pid); // [12345]
 */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
      .trim()
      .split(/\s+/)
      .filter((s) => s !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * Resets a process's VmHWM to its current resident size (writes 5 to /proc/<pid>/clear_refs, Linux ≥ 4.0), so a
 * later VmHWM is the peak from now on; returns false where that is not allowed.
 *
 * @example
 * resetPeakMemory(worker.pid); // before the timed part, after the setup
 */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}
