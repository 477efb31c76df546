import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);

// The typed payloads import `stripe` and `@octokit/webhooks-types` as types only. A project that installed
// neither must still compile (with skipLibCheck) and see `unknown` payloads, never `any`.
test("Handlers without stripe or @octokit/webhooks-types installed: payloads are unknown, not any", async () => {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-nosdk-"));
  try {
    const pkg = join(dir, "node_modules", "hookledger");
    await mkdir(pkg, { recursive: true });
    await cp("dist", join(pkg, "dist"), { recursive: true });
    await cp("package.json", join(pkg, "package.json"));
    await writeFile(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          skipLibCheck: true,
        },
        files: ["app.ts"],
      }),
    );
    await writeFile(
      join(dir, "app.ts"),
      `import { Handlers } from "hookledger";
// Under @ts-expect-error, an \`any\` payload (assignable to number) fails the compile; \`unknown\` does not.
new Handlers()
  // @ts-expect-error unknown
  .on("stripe", "invoice.paid", (ctx) => { const n: number = ctx.event.payload; })
  // @ts-expect-error unknown
  .on("stripe", "*", (ctx) => { const n: number = ctx.event.payload; })
  // @ts-expect-error unknown
  .on("github", "issues.opened", (ctx) => { const n: number = ctx.event.payload; })
  // @ts-expect-error unknown
  .on("github", "*", (ctx) => { const n: number = ctx.event.payload; })
  .on("paddle", "subscription.updated", (ctx) => void ctx.event.payload.occurred_at.length);
`,
    );
    const tsc = resolve("node_modules/typescript/bin/tsc");
    const result = await run(process.execPath, [tsc, "-p", dir, "--noEmit"]).then(
      () => "",
      (error: { stdout: string }) => error.stdout,
    );
    assert.equal(result, "");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
