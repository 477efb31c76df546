// Runs after tsc, which writes only the declarations: bundles the package's entry points (package.json "exports" and
// the CLI) into dist/, with the code they share in chunks next to them. Unbundled, `import "hookledger"` read
// 136 files and took 140-151 ms inside the process on the 2-core machine of docs/benchmarks.md ("The footprint");
// bundled, 21 files and 52 ms.
// Every output file sits in dist/ itself, never deeper: src/files.ts finds the package's files from there.
// Dependencies stay external (`packages: "external"`): pg, pino and prom-client load on first use (src/deps.ts) and
// the optional ones only when a feature asks for them.
import { chmod, writeFile } from "node:fs/promises";
import { build } from "esbuild";

const { metafile } = await build({
  entryPoints: {
    index: "src/index.ts",
    express: "src/express.ts",
    fastify: "src/fastify.ts",
    hono: "src/hono.ts",
    testing: "src/testing.ts",
    cli: "src/cli/main.ts",
  },
  outdir: "dist",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  chunkNames: "chunk-[hash]",
  sourcemap: true,
  logLevel: "warning",
  metafile: true,
});

// Which source modules each output holds and which outputs it imports: test/unit/testing-entry.test.ts reads it to
// prove that `import "hookledger"` never loads the test kit. Not packed (package.json "files").
await writeFile("dist/bundle.json", `${JSON.stringify(metafile)}\n`);

// The bin keeps its path (dist/cli/main.js, which the docs and scripts run) as a one-line module loading the
// bundled CLI.
await writeFile("dist/cli/main.js", '#!/usr/bin/env node\nimport "../cli.js";\n');
await chmod("dist/cli/main.js", 0o755);
