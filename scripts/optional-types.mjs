// Runs after tsc: in the built declarations, a type import from an optional package (the provider SDKs whose event
// types type handler payloads; @types/pg, which would bring @types/node's 2.8 MB to every JavaScript user) gets a
// `// @ts-ignore`, so an app without that package compiles even with skipLibCheck off and sees those payloads as
// `unknown`, pg's classes as `any`. tsc drops such comments from the declarations it emits.
import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

const OPTIONAL = ["stripe", "@octokit/webhooks-types", "pg"];
const line = new RegExp(
  `^import type .* from "(${OPTIONAL.map((p) => p.replace("/", "\\/")).join("|")})";$`,
  "gm",
);

const files = (await readdir("dist", { recursive: true })).filter((f) => f.endsWith(".d.ts"));
for (const file of files) {
  const path = join("dist", file);
  const text = await readFile(path, "utf8");
  const marked = text.replace(
    line,
    (m) => `// @ts-ignore -- optional peer: absent, its types are unknown\n${m}`,
  );
  if (marked !== text) await writeFile(path, marked);
}
