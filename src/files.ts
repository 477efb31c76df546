// The files hookledger reads at run time (its migrations, the dashboard's assets, package.json) are found from this
// module's own location. It sits at the root of the compiled tree, and so does every file of the bundle
// (scripts/bundle.mjs writes its entries and chunks into dist/ itself), so one base serves src/ under tsx, tsc's
// dist/ and the bundle alike. A path relative to the module that reads the file would break once bundled.
const ROOT = new URL("./", import.meta.url);

/**
 * A file of the package, by its path from the root of the compiled tree (`src/` or `dist/`).
 *
 * @example
 * const migrations = packageFile("db/migrations/");
 * const pkg = packageFile("../package.json");
 */
export function packageFile(path: string): URL {
  return new URL(path, ROOT);
}
