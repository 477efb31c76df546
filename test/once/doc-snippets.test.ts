// Every fenced TS/JS snippet in README.md and docs/ compiles against the built package, as a user's file would;
// snippets tagged `app` (the README's library example) run as an app that receives, applies and settles signed
// Stripe events, and stops on SIGTERM. A fence tagged `fragment` is only part of a file and is not compiled.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { checkStripeApp } from "../helpers/app-snippet.js";
import { markdownSnippets, type Snippet } from "../helpers/snippets.js";

// Inside the package, so `import "hookledger"` resolves to the built dist/ through the package's own exports, the
// way it does in an app that installed it.
const DIR = resolve(".snippets");
const docs = [
  "README.md",
  ...readdirSync("docs")
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f)),
];
const snippets = docs.flatMap((file) => markdownSnippets(file));
const compiled = snippets.filter((s) => !s.tags.includes("fragment"));
const nameOf = (s: Snippet) =>
  `${s.file.replace(/[^\w]/g, "_")}_L${s.line}.${s.lang === "ts" ? "ts" : "mjs"}`;

before(() => {
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  for (const s of compiled) {
    const isModule = /^\s*(import|export)\s/m.test(s.code);
    writeFileSync(join(DIR, nameOf(s)), `${s.code}\n${isModule ? "" : "export {};\n"}`);
  }
  writeFileSync(
    join(DIR, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        lib: ["ES2023", "DOM"],
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        allowJs: true,
        checkJs: true,
        types: ["node"],
      },
      include: ["*.ts", "*.mjs"],
    }),
  );
});
after(() => rmSync(DIR, { recursive: true, force: true }));

test("README.md and docs/ have snippets, and the README's library example is tagged to run", () => {
  assert.ok(compiled.length >= 5, `only ${compiled.length} compiled snippets found`);
  assert.ok(compiled.some((s) => s.file === "README.md" && s.tags.includes("app")));
});

test("every fenced TS/JS snippet in README.md and docs/ type-checks against the built package", () => {
  const tsc = spawnSync(process.execPath, [resolve("node_modules/typescript/bin/tsc"), "-p", DIR], {
    encoding: "utf8",
  });
  // Name each failing snippet by its Markdown file and line, not by the generated file.
  const report = (tsc.stdout + tsc.stderr).replace(
    /\.snippets\/(\S+?)_L(\d+)\.(ts|mjs)/g,
    (_m, f: string, l: string) => {
      const s = compiled.find((c) => nameOf(c).startsWith(`${f}_L${l}.`));
      return s ? `${s.file}:${s.line} (snippet)` : `${f}:${l}`;
    },
  );
  assert.equal(tsc.status, 0, report);
});

for (const s of compiled.filter((c) => c.tags.includes("app"))) {
  test(`the app snippet at ${s.file}:${s.line} receives, applies and settles signed Stripe events, and stops on SIGTERM`, async () => {
    await checkStripeApp(["--import", "tsx", join(DIR, nameOf(s))]);
  });
}
