import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import type { SourceConfig } from "hookledger";
import { resolveConfig } from "hookledger";

// The README's per-provider recipes are code users paste: every one of them must pass validation.
test("the README's provider recipes all validate", async () => {
  const readme = await readFile("README.md", "utf8");
  const block = readme.match(/One recipe per provider[\s\S]*?```js[^\n]*\n([\s\S]*?)```/)?.[1];
  assert.ok(block, "the README has the provider recipes");
  const dir = await mkdtemp(join(tmpdir(), "hookledger-readme-"));
  try {
    const file = join(dir, "recipes.mjs");
    await writeFile(file, `const env = (name) => ({ env: name });\nexport default [\n${block}\n];\n`);
    const { default: sources } = (await import(pathToFileURL(file).href)) as { default: SourceConfig[] };
    assert.equal(sources.length, 8);
    const environment = Object.fromEntries(
      sources.flatMap((s) => s.secrets).map((ref) => [(ref as { env: string }).env, "c2VjcmV0LWtleQ=="]),
    );
    const config = resolveConfig({ sources }, environment);
    assert.deepEqual(
      config.sources.map((s) => s.provider.name),
      ["stripe", "github", "shopify", "paddle", "slack", "standard", "awardee", "generic"],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
