import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The repository root (the package that is packed). */
export const PACKAGE_ROOT = resolve(".");

/**
 * `npm pack` of the built package into `dir` (dist/ must be built: scripts are skipped, so packing does not
 * rebuild). Returns the tarball's path.
 *
 * @example
 * const tarball = await packInto(tmp);
 */
export async function packInto(dir: string): Promise<string> {
  const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], {
    cwd: PACKAGE_ROOT,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  if (!packed) throw new Error(`npm pack printed no file: ${stdout}`);
  return join(dir, packed.filename);
}

/** A temporary app with the tarball installed, and what npm printed while installing it. */
export interface InstalledApp {
  readonly dir: string;
  readonly output: string;
}

/**
 * Creates an ES module app in `dir` and installs the tarball (plus `extra` packages) into it as a user would:
 * `npm install <tarball>`, the registry reachable, install scripts allowed, warnings shown.
 *
 * @example
 * const app = await installApp(join(tmp, "app"), tarball, { args: ["--omit=dev"] });
 */
export async function installApp(
  dir: string,
  tarball: string,
  options: { readonly args?: readonly string[]; readonly extra?: readonly string[] } = {},
): Promise<InstalledApp> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, "package.json"),
    `${JSON.stringify({ name: "hookledger-user-app", private: true, type: "module" }, null, 2)}\n`,
  );
  const { stdout, stderr } = await run(
    "npm",
    [
      "install",
      tarball,
      ...(options.extra ?? []),
      "--no-audit",
      "--no-fund",
      "--loglevel=warn",
      ...(options.args ?? []),
    ],
    { cwd: dir, maxBuffer: 16 * 1024 * 1024 },
  );
  return { dir, output: stdout + stderr };
}
