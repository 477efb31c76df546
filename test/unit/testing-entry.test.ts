import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { test } from "node:test";

/** Every module `entry` loads, following its relative static and dynamic imports in the built dist/. */
function loadedBy(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      visit(resolve(dirname(file), match[1] ?? ""));
    }
  };
  visit(resolve(entry));
  return new Set([...seen].map((f) => relative("dist", f)));
}

test('import "hookledger" never loads the test kit, and "hookledger/testing" is its own entry', () => {
  const main = loadedBy(join("dist", "index.js"));
  assert.ok(main.size > 10, "the walk found the main entry's modules");
  assert.deepEqual(
    [...main].filter((f) => f.startsWith("testing")),
    [],
  );
  const kit = loadedBy(join("dist", "testing.js"));
  assert.ok(kit.has(join("testing", "sign.js")) && kit.has(join("worker", "context.js")));
});
