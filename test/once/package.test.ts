import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import ts from "typescript";
import { NOT_AT_IMPORT, runNode } from "../helpers/node-run.js";
import { checkStripeApp } from "../helpers/app-snippet.js";
import { type InstalledApp, installApp, PACKAGE_ROOT, packInto } from "../helpers/pack.js";
import { markdownSnippets } from "../helpers/snippets.js";

// One pack and one install for the whole file: the tarball goes into an app that installs none of the optional
// peers, as a library user's would.
let work: string;
let app: InstalledApp;
let tarball: string;
before(
  async () => {
    work = await mkdtemp(join(tmpdir(), "hookledger-pack-"));
    tarball = await packInto(work);
    app = await installApp(join(work, "app"), tarball);
  },
  { timeout: 180_000 },
);
after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const manifest = JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as {
  exports: Record<string, { import: string }>;
};

/** The names an entry file exports as values (what exists at runtime), read from the source with the compiler. */
function runtimeExports(entries: readonly string[]): Map<string, string[]> {
  const program = ts.createProgram([...entries], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const names = new Map<string, string[]>();
  for (const entry of entries) {
    const file = program.getSourceFile(entry);
    const module = file && checker.getSymbolAtLocation(file);
    assert.ok(module, `${entry} is a module`);
    const values = checker.getExportsOfModule(module).filter((symbol) => {
      const typeOnly = symbol.declarations?.some(
        (d) =>
          (ts.isExportSpecifier(d) && (d.isTypeOnly || d.parent.parent.isTypeOnly)) ||
          ts.isTypeAliasDeclaration(d),
      );
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return !typeOnly && (target.flags & ts.SymbolFlags.Value) !== 0;
    });
    names.set(entry, values.map((symbol) => symbol.name).sort());
  }
  return names;
}

test("npm install <tarball> without the optional peers installs none of them and warns of no engine", () => {
  assert.doesNotMatch(app.output, /EBADENGINE/, app.output);
  const installed = NOT_AT_IMPORT.filter(
    (name) => name !== "pino-pretty" && existsSync(join(app.dir, "node_modules", name)),
  );
  assert.deepEqual(installed, []);
});

test("the packed package.json carries no install-time script and installing it warns of none", async () => {
  const { stdout } = await promisify(execFile)("tar", ["-xOzf", tarball, "package/package.json"]);
  const scripts = (JSON.parse(stdout) as { scripts?: Record<string, string> }).scripts ?? {};
  const atInstall = ["preinstall", "install", "postinstall", "prepare"].filter((name) => name in scripts);
  assert.deepEqual(atInstall, [], `scripts run when a user installs it: ${atInstall.join(", ")}`);
  assert.doesNotMatch(app.output, /install scripts|allowScripts|prepare:/, app.output);
});

test("npm install <tarball> brings no type packages: @types/pg is an optional peer, not @types/node's 2.8 MB for everyone", () => {
  const types = join(app.dir, "node_modules", "@types");
  assert.deepEqual(existsSync(types) ? readdirSync(types) : [], []);
});

test("every subpath of package.json exports imports in the app, with every name its entry file exports", async () => {
  const subpaths = Object.entries(manifest.exports).map(([subpath, target]) => ({
    specifier: `hookledger${subpath.slice(1)}`,
    source: join(PACKAGE_ROOT, target.import.replace("./dist/", "src/").replace(/\.js$/, ".ts")),
  }));
  assert.ok(subpaths.length >= 4, "the root and the framework subpaths");
  const expected = runtimeExports(subpaths.map((s) => s.source));
  const script = `const out = {};
    for (const s of ${JSON.stringify(subpaths.map((s) => s.specifier))}) out[s] = Object.keys(await import(s)).sort();
    console.log(JSON.stringify(out));`;
  const run = await runNode(["--input-type=module", "-e", script], { cwd: app.dir });
  assert.equal(run.code, 0, run.stderr);
  const actual = JSON.parse(run.stdout) as Record<string, string[]>;
  for (const { specifier, source } of subpaths) {
    const names = expected.get(source) ?? [];
    assert.ok(names.length > 0, `${source} exports values`);
    const missing = names.filter((name) => !actual[specifier]?.includes(name));
    assert.deepEqual(missing, [], `${specifier} lacks ${missing.join(", ")}`);
  }
  assert.ok(expected.get(subpaths[0]?.source ?? "")?.includes("createReceiver"));
});

test("the installed bin answers hookledger --help", async () => {
  const run = await runNode([join(app.dir, "node_modules", ".bin", "hookledger"), "--help"], {
    cwd: app.dir,
  });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^Usage: hookledger <command>/m);
});

test("replayStripe in the app, where stripe is not installed, rejects naming npm install stripe", async () => {
  const script = `const { replayStripe, MissingPackageError } = await import("hookledger");
    const error = await replayStripe({ source: "stripe", api: { apiKey: "sk_test_x" }, since: new Date(Date.now() - 60_000),
      via: { url: "http://127.0.0.1:9", token: "t" } }).then(() => undefined, (e) => e);
    console.log(JSON.stringify({ missing: error instanceof MissingPackageError, message: error?.message }));`;
  const run = await runNode(["--input-type=module", "-e", script], { cwd: app.dir });
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), {
    missing: true,
    message: "replay stripe needs the stripe package: npm install stripe",
  });
});

// The framework subpaths' types need the framework's own (a Fastify user has fastify installed); the root entry needs
// none of the optional packages, which is what a library user without them compiles against.
test("a user's TypeScript file using the root's public types type-checks with no optional package installed", async () => {
  await writeFile(
    join(app.dir, "user.ts"),
    `import {
  createFetchHandler, createLogger, createPool, createReceiver, defineConfig, env, type HandlerContext, Handlers,
  ledgerContext, MissingPackageError, type Provider, type Receiver, resolveConfig,
} from "hookledger";

const config = defineConfig({
  sources: [{ name: "stripe", provider: "stripe", secrets: [env("STRIPE_WEBHOOK_SECRET")] }],
  handlers: new Handlers().on("stripe", "customer.updated", async (ctx: HandlerContext) => {
    if (!(await ctx.advance())) return;
  }),
});
const receiver: Receiver = createReceiver({
  sources: resolveConfig(config).sources,
  db: createPool({ connectionString: "postgres://localhost/app", role: "ingest" }),
  ledger: ledgerContext(),
  log: createLogger(),
});
export const POST: (request: Request) => Promise<Response> = createFetchHandler(receiver);
export const providerName = (provider: Provider): string => provider.name;
export const isMissing = (error: unknown): boolean => error instanceof MissingPackageError;
`,
  );
  const tsconfig = {
    compilerOptions: {
      module: "NodeNext",
      moduleResolution: "NodeNext",
      target: "ES2022",
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ["node"],
    },
    files: ["user.ts"],
  };
  await writeFile(join(app.dir, "tsconfig.json"), JSON.stringify(tsconfig));
  // A TypeScript user of a Node library has @types/node; the install brought none (no @types/pg either).
  const nodeTypes = join(app.dir, "node_modules", "@types", "node");
  if (!existsSync(nodeTypes)) {
    await mkdir(join(app.dir, "node_modules", "@types"), { recursive: true });
    await symlink(join(PACKAGE_ROOT, "node_modules", "@types", "node"), nodeTypes);
  }
  const tsc = join(PACKAGE_ROOT, "node_modules", "typescript", "bin", "tsc");
  const run = await runNode([tsc, "-p", "tsconfig.json"], { cwd: app.dir, timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stdout + run.stderr);
});

test("the README's library example, copied into the installed app with Express, receives, applies and settles signed Stripe events", async () => {
  const example = markdownSnippets(join(PACKAGE_ROOT, "README.md")).find((s) => s.tags.includes("app"));
  assert.ok(example, "README.md has the library example");
  // Express as the app would install it; linked from this repository to spare a second registry install.
  await symlink(
    join(PACKAGE_ROOT, "node_modules", "express"),
    join(app.dir, "node_modules", "express"),
    "dir",
  );
  const file = join(app.dir, "server.ts");
  await writeFile(file, example.code);
  await checkStripeApp(["--import", import.meta.resolve("tsx"), file], { cwd: app.dir });
});
