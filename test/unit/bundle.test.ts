import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

// The build's record of the bundle (scripts/bundle.mjs): each output's source modules and the outputs it imports.
interface Metafile {
  outputs: Record<
    string,
    { inputs: Record<string, unknown>; imports: { path: string; external?: boolean }[] }
  >;
}

/** Every source module that loading `entry` may run: its output and every output it imports, statically or not. */
function sourcesLoadedBy(meta: Metafile, entry: string): Set<string> {
  const outputs = new Set<string>();
  const visit = (output: string) => {
    if (outputs.has(output)) return;
    outputs.add(output);
    for (const i of meta.outputs[output]?.imports ?? []) if (!i.external) visit(i.path);
  };
  visit(entry);
  return new Set([...outputs].flatMap((o) => Object.keys(meta.outputs[o]?.inputs ?? {})));
}

test('import "hookledger" never loads the test kit, and "hookledger/testing" is its own entry', () => {
  const meta = JSON.parse(readFileSync("dist/bundle.json", "utf8")) as Metafile;
  const main = sourcesLoadedBy(meta, "dist/index.js");
  assert.ok(main.has("src/ledger/claim.ts"), "the walk found the main entry's modules");
  assert.deepEqual(
    [...main].filter((f) => f.startsWith("src/testing")),
    [],
  );
  const kit = sourcesLoadedBy(meta, "dist/testing.js");
  assert.ok(kit.has("src/testing/sign.ts") && kit.has("src/worker/context.ts"));
});

test("the bundle holds each source module in one output, so every entry shares its one copy", () => {
  const meta = JSON.parse(readFileSync("dist/bundle.json", "utf8")) as Metafile;
  const owners = new Map<string, string[]>();
  for (const [output, { inputs }] of Object.entries(meta.outputs)) {
    for (const input of Object.keys(inputs)) owners.set(input, [...(owners.get(input) ?? []), output]);
  }
  assert.ok(owners.has("src/edge/receiver.ts"), "the walk found the modules");
  assert.deepEqual(
    [...owners].filter(([, outputs]) => outputs.length > 1),
    [],
  );
});

test("hookledger migrate with its chunk gone from the install exits 1 naming the command and the fix", () => {
  const meta = JSON.parse(readFileSync("dist/bundle.json", "utf8")) as Metafile;
  const chunk = Object.entries(meta.outputs).find(([, o]) => "src/cli/commands/migrate.ts" in o.inputs)?.[0];
  if (!chunk?.startsWith("dist/chunk-")) assert.fail(`migrate has no chunk of its own: ${chunk}`);
  // Inside the repository, so that the copy still finds node_modules.
  const dir = mkdtempSync(join("test", ".install-"));
  try {
    cpSync("dist", join(dir, "dist"), { recursive: true });
    rmSync(join(dir, chunk));
    const run = spawnSync(process.execPath, [join(dir, "dist", "cli", "main.js"), "migrate"], {
      encoding: "utf8",
    });
    assert.equal(run.status, 1);
    assert.equal(
      run.stderr,
      "hookledger: migrate is missing from this install of hookledger; reinstall the package\n",
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
