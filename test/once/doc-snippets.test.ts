// Every fenced TS/JS snippet in README.md and docs/ compiles against the built package, as a user's file would;
// snippets tagged `app` (the README's library example) run as an app that receives, applies and settles signed
// Stripe events, and stops on SIGTERM. A fence tagged `fragment` is only part of a file and is not compiled.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import pg from "pg";
import { testDatabaseUrl, waitFor } from "../helpers/db.js";
import { stripeHeaders } from "../helpers/http.js";
import { freePort } from "../helpers/net.js";
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
    const schema = `snip_${randomBytes(4).toString("hex")}`;
    const base = testDatabaseUrl();
    const admin = new pg.Pool({ connectionString: base, max: 1 });
    await admin.query(`create schema "${schema}"`);
    // The app's own table, found through the search_path, beside the ledger in the same schema.
    await admin.query(
      `create table "${schema}".subscriptions (stripe_id text primary key, status text not null)`,
    );
    await admin.query(`insert into "${schema}".subscriptions values ('sub_snip', 'incomplete')`);
    const port = await freePort();
    const url = new URL(base);
    url.searchParams.set("options", `-c search_path=${schema}`);
    const child = spawn(process.execPath, ["--import", "tsx", join(DIR, nameOf(s))], {
      env: {
        ...process.env,
        DATABASE_URL: url.toString(),
        HOOKLEDGER_SCHEMA: schema,
        PORT: String(port),
        STRIPE_WEBHOOK_SECRET: "whsec_snippet",
        LOG_FORMAT: "json",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d));
    child.stderr.on("data", (d: Buffer) => (output += d));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      const now = Math.floor(Date.now() / 1000);
      const event = (id: string, created: number, status: string) =>
        JSON.stringify({
          id,
          object: "event",
          type: "customer.subscription.updated",
          created,
          data: { object: { id: "sub_snip", object: "subscription", status } },
        });
      const post = async (body: string) => {
        const reply = await fetch(`http://127.0.0.1:${port}/webhooks/stripe`, {
          method: "POST",
          headers: stripeHeaders(body, "whsec_snippet"),
          body,
        });
        return { status: reply.status, body: (await reply.json()) as { status: string } };
      };
      await waitFor(`the app to listen (output: ${output})`, async () =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => true,
          () => false,
        ),
      );
      const newer = event("evt_snip_2", now - 10, "active");
      assert.deepEqual(await post(newer), { status: 200, body: { status: "accepted", id: "evt_snip_2" } });
      assert.equal((await post(newer)).body.status, "duplicate");
      assert.equal((await post(event("evt_snip_1", now - 20, "past_due"))).body.status, "accepted");
      await waitFor("both events to settle", async () => {
        const { rows } = await admin.query(
          `select count(*)::int as n from "${schema}".events where status = 'settled'`,
        );
        return rows[0].n === 2;
      });
      const { rows } = await admin.query(
        `select dedupe_key, outcome from "${schema}".events order by dedupe_key`,
      );
      assert.deepEqual(rows, [
        { dedupe_key: "evt_snip_1", outcome: "stale" },
        { dedupe_key: "evt_snip_2", outcome: "applied" },
      ]);
      const sub = await admin.query(`select status from "${schema}".subscriptions`);
      assert.equal(sub.rows[0].status, "active");
      child.kill("SIGTERM");
      const code = await Promise.race([
        exited,
        new Promise((r) => setTimeout(() => r("still running"), 15_000)),
      ]);
      assert.equal(
        code,
        0,
        `after SIGTERM the app ${code === "still running" ? "did not exit" : `exited ${code}`}`,
      );
    } finally {
      child.kill("SIGKILL");
      await admin.query(`drop schema "${schema}" cascade`);
      await admin.end();
    }
  });
}
