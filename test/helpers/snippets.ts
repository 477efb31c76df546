import { readFileSync } from "node:fs";

/** One fenced TS/JS block of a Markdown file. */
export interface Snippet {
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly lang: "ts" | "js";
  /**
   * Words after the language: `fragment` (part of a file: not compiled), `continues` (compiled as the rest of the
   * file's previous snippet), `app` (run as an app).
   */
  readonly tags: readonly string[];
  readonly code: string;
}

const LANGS: Record<string, "ts" | "js"> = {
  ts: "ts",
  typescript: "ts",
  js: "js",
  javascript: "js",
  mjs: "js",
};

/**
 * Every ```ts / ```js fence of a Markdown file, with its tags (```ts fragment, ```ts app).
 *
 * @example
 * const snippets = markdownSnippets("README.md").filter((s) => !s.tags.includes("fragment"));
 */
export function markdownSnippets(file: string): Snippet[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const found: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w+)(.*)$/.exec(lines[i] ?? "");
    if (!open) continue;
    const indent = open[1] ?? "";
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j] ?? ""); j++)
      body.push((lines[j] ?? "").slice(indent.length));
    const lang = LANGS[open[2] ?? ""];
    if (lang) {
      found.push({
        file,
        line: i + 1,
        lang,
        tags: (open[3] ?? "").trim().split(/\s+/).filter(Boolean),
        code: body.join("\n"),
      });
    }
    i = j;
  }
  return joinContinuations(found);
}

// A snippet tagged `continues` is the next part of the previous one's program (docs that build an app step by step).
function joinContinuations(snippets: Snippet[]): Snippet[] {
  const out: Snippet[] = [];
  for (const s of snippets) {
    const previous = out.findLast((p) => p.file === s.file && !p.tags.includes("fragment"));
    if (s.tags.includes("continues") && previous) {
      out[out.indexOf(previous)] = { ...previous, code: `${previous.code}\n${s.code}` };
    } else {
      out.push(s);
    }
  }
  return out;
}
