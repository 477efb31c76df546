// A PromQL reader and a Prometheus text-exposition parser for test/once/monitoring-files.test.ts: which metrics and
// labels the shipped alert rules and dashboard name, checked against a real scrape.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
// ---------------------------------------------------------------------------------------------------------------
// A PromQL reader: the metric names an expression selects, the label names its selectors match on, and the label
// names of its by/without/on/ignoring clauses with the metrics each applies to. Function names, aggregation
// operators, keywords, string literals, numbers, durations, range brackets and Grafana's $variables are not
// metrics; an unknown function name is an error (a typo would otherwise read as a metric and fail obscurely).

const FUNCTIONS = new Set([
  // aggregation operators
  ..."sum min max avg group stddev stdvar count count_values bottomk topk quantile".split(" "),
  // functions
  ...(
    "abs absent absent_over_time ceil changes clamp clamp_max clamp_min delta deriv exp floor " +
    "histogram_quantile idelta increase irate label_join label_replace ln log2 log10 predict_linear " +
    "rate resets round scalar sgn sort sort_desc sqrt time timestamp vector avg_over_time " +
    "min_over_time max_over_time sum_over_time count_over_time quantile_over_time stddev_over_time " +
    "last_over_time present_over_time"
  ).split(" "),
]);
const KEYWORDS = new Set(["and", "or", "unless", "offset", "bool", "inf", "nan"]);
const GROUPING = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

interface Token {
  readonly kind: "ident" | "string" | "punct" | "range" | "number" | "op" | "variable";
  readonly text: string;
}

function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const rest = expr.slice(i);
    const c = expr[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "#") {
      while (i < expr.length && expr[i] !== "\n") i++;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < expr.length && expr[j] !== c) j += expr[j] === "\\" && c !== "`" ? 2 : 1;
      assert.ok(j < expr.length, `unterminated string in ${expr}`);
      tokens.push({ kind: "string", text: expr.slice(i + 1, j) });
      i = j + 1;
    } else if (c === "[") {
      const j = expr.indexOf("]", i);
      assert.ok(j > i, `unclosed [ in ${expr}`);
      tokens.push({ kind: "range", text: expr.slice(i + 1, j) });
      i = j + 1;
    } else if ("(){},".includes(c)) {
      tokens.push({ kind: "punct", text: c });
      i++;
    } else {
      const match =
        /^\d[\d.]*(?:e[+-]?\d+)?(?:(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*)?/i.exec(rest) ??
        /^\$\{?\w+\}?/.exec(rest) ??
        /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(rest) ??
        /^(?:==|!=|>=|<=|=~|!~|[-+*/%^<>=])/.exec(rest);
      assert.ok(match, `unexpected ${JSON.stringify(c)} at ${i} in ${expr}`);
      const text = match[0];
      const kind = /^\d/.test(text)
        ? "number"
        : text.startsWith("$")
          ? "variable"
          : /^[a-zA-Z_:]/.test(text)
            ? "ident"
            : "op";
      tokens.push({ kind, text });
      i += text.length;
    }
  }
  return tokens;
}

interface Matcher {
  readonly label: string;
  readonly op: string;
  readonly value: string;
}
interface MetricReference {
  readonly metric: string;
  readonly matchers: readonly Matcher[];
  readonly at: number;
}
interface Grouping {
  readonly keyword: string;
  readonly labels: readonly string[];
  /** The metrics the clause's labels must exist on. */
  readonly metrics: readonly string[];
}
interface PromqlUse {
  readonly references: readonly MetricReference[];
  readonly groupings: readonly Grouping[];
}

export function readPromql(expr: string): PromqlUse {
  const tokens = tokenize(expr);
  const matching = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((t, i) => {
    if (t.kind !== "punct") return;
    if (t.text === "(") open.push(i);
    if (t.text === ")") {
      const start = open.pop();
      assert.ok(start !== undefined, `unbalanced ) in ${expr}`);
      matching.set(start, i).set(i, start);
    }
  });
  assert.equal(open.length, 0, `unbalanced ( in ${expr}`);
  const references: MetricReference[] = [];
  const clauses: { keyword: string; labels: string[]; from: number; to: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    const next = tokens[i + 1];
    assert.ok(!(t.kind === "punct" && t.text === "{"), `a selector without a metric name in ${expr}`);
    if (t.kind !== "ident") continue;
    const word = t.text.toLowerCase();
    if (GROUPING.has(word)) {
      if (next?.text !== "(") continue; // group_left without labels
      const close = matching.get(i + 1) as number;
      const labels = tokens
        .slice(i + 2, close)
        .filter((l) => l.text !== ",")
        .map((l) => {
          assert.equal(l.kind, "ident", `a label name in ${t.text} (…) of ${expr}`);
          return l.text;
        });
      // by/without: the aggregation's argument, after the clause or before it (`sum (x) by (l)`).
      let from = 0;
      let to = tokens.length - 1;
      if (word === "by" || word === "without") {
        if (tokens[close + 1]?.text === "(") {
          from = close + 1;
          to = matching.get(close + 1) as number;
        } else {
          assert.equal(tokens[i - 1]?.text, ")", `${t.text} (…) without an aggregation argument in ${expr}`);
          to = i - 1;
          from = matching.get(i - 1) as number;
        }
      }
      clauses.push({ keyword: word, labels, from, to });
      i = close;
      continue;
    }
    if (KEYWORDS.has(word)) continue;
    // A function call, or an aggregation with its clause first: `sum by (l) (…)`.
    if (next?.text === "(" || (next?.kind === "ident" && GROUPING.has(next.text.toLowerCase()))) {
      assert.ok(FUNCTIONS.has(t.text), `unknown PromQL function ${t.text} in ${expr}`);
      continue;
    }
    const matchers: Matcher[] = [];
    const at = i;
    if (next?.text === "{") {
      i += 2;
      while (tokens[i]?.text !== "}") {
        const [label, op, value] = [tokens[i], tokens[i + 1], tokens[i + 2]];
        assert.ok(
          label?.kind === "ident" && op?.kind === "op" && value?.kind === "string",
          `a label matcher in ${expr}`,
        );
        matchers.push({ label: label.text, op: op.text, value: value.text });
        i += 3;
        if (tokens[i]?.text === ",") i++;
        assert.ok(i < tokens.length, `unclosed { in ${expr}`);
      }
    }
    references.push({ metric: t.text, matchers, at });
  }
  const groupings = clauses.map(({ keyword, labels, from, to }) => ({
    keyword,
    labels,
    metrics: references.filter((r) => r.at > from && r.at < to).map((r) => r.metric),
  }));
  return { references, groupings };
}

// ---------------------------------------------------------------------------------------------------------------
// A Prometheus text exposition: each family's type, and the label names each sample name carries.

export interface Scrape {
  readonly types: Map<string, string>;
  readonly labels: Map<string, Set<string>>;
}

export function parseScrape(text: string): Scrape {
  const types = new Map<string, string>();
  const labels = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1] as string, type[2] as string);
    if (line === "" || line.startsWith("#")) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+/.exec(line);
    assert.ok(sample, `a sample line: ${line}`);
    const names = labels.get(sample[1] as string) ?? new Set<string>();
    for (const m of (sample[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) {
      names.add(m[1] as string);
    }
    labels.set(sample[1] as string, names);
  }
  return { types, labels };
}

/** The family a referenced name belongs to: itself, or a histogram's (summary's) _bucket/_sum/_count. */
function familyOf(scrape: Scrape, name: string): string | undefined {
  if (scrape.types.has(name)) return name;
  const suffix = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (!suffix) return undefined;
  const base = suffix[1] as string;
  const type = scrape.types.get(base);
  if (type === "histogram") return base;
  if (type === "summary" && suffix[2] !== "bucket") return base;
  return undefined;
}

// The label values hookledger can put on `result` and `outcome`, read from the types that define them.
function union(file: string, pattern: RegExp): Set<string> {
  const text = readFileSync(file, "utf8");
  const body = pattern.exec(text)?.[1];
  assert.ok(body, `${pattern} in ${file}`);
  const values = new Set([...body.matchAll(/"([a-z_]+)"/g)].map((m) => m[1] as string));
  assert.ok(values.size >= 4, `the values of ${pattern} in ${file}`);
  return values;
}
const DELIVERY_RESULTS = union("src/edge/observer.ts", /export type DeliveryResult =([^;]+);/);
const ATTEMPT_RESULTS = union("src/worker/attempt.ts", /readonly result: ([^;]+);/);
const OUTCOMES = union("src/ledger/settle.ts", /export type Outcome = ([^;]+);/);
const KNOWN_VALUES: Record<string, Record<string, Set<string>>> = {
  hookledger_deliveries_total: { result: DELIVERY_RESULTS },
  hookledger_claim_duration_seconds: { result: DELIVERY_RESULTS },
  hookledger_attempts_total: { result: ATTEMPT_RESULTS, outcome: OUTCOMES },
  hookledger_attempt_duration_seconds: { result: ATTEMPT_RESULTS },
};

/** Every problem of `expr` against the scrape: unknown metrics, label names, and result/outcome values. */
export function problemsOf(scrape: Scrape, expr: string): string[] {
  const problems: string[] = [];
  const { references, groupings } = readPromql(expr);
  if (references.length === 0) problems.push(`no metric in ${expr}`);
  const labelsOf = (name: string) => scrape.labels.get(name);
  for (const { metric, matchers } of references) {
    const family = familyOf(scrape, metric);
    if (!family) {
      problems.push(`${metric} is not exported`);
      continue;
    }
    const labels = labelsOf(metric);
    if (!labels) {
      problems.push(`${metric} has no sample in the scrape, so its labels cannot be checked`);
      continue;
    }
    for (const { label, op, value } of matchers) {
      if (!labels.has(label))
        problems.push(`${metric} has no label ${label} (it has ${[...labels].join(", ")})`);
      const known = KNOWN_VALUES[family]?.[label];
      if (!known || value.includes("$")) continue;
      const values = op === "=~" || op === "!~" ? value.split("|") : [value];
      for (const v of values) {
        if (!known.has(v))
          problems.push(`${metric}{${label}${op}"${value}"}: hookledger never sets ${label}="${v}"`);
      }
    }
  }
  for (const { keyword, labels, metrics } of groupings) {
    for (const metric of metrics) {
      const present = labelsOf(metric);
      if (!present) continue; // reported above
      for (const label of labels) {
        if (!present.has(label)) problems.push(`${keyword} (${label}): ${metric} has no label ${label}`);
      }
    }
  }
  return problems;
}
