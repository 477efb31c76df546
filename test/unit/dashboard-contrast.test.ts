import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

// The dashboard's colours, read from its stylesheet as shipped, hold WCAG 2.x AA contrast (4.5:1 for text) in every
// pairing the page uses. A colour changed in app.css without checking it fails here.
const css = readFileSync(new URL("../../src/dashboard/assets/app.css", import.meta.url), "utf8");
const variables = Object.fromEntries(
  [...css.matchAll(/--([a-z]+):\s*(#[0-9a-f]{3,6})\s*;/gi)].map((m) => [m[1], m[2]]),
);
const colour = (name: string): string => {
  const value = name.startsWith("#") ? name : variables[name];
  assert.ok(value, `app.css defines --${name}`);
  return value as string;
};

function luminance(hex: string): number {
  const full = hex.length === 4 ? `#${[...hex.slice(1)].map((c) => c + c).join("")}` : hex;
  const [r, g, b] = [1, 3, 5].map((i) => {
    const c = Number.parseInt(full.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

// [text, background, where]
const PAIRS: [string, string, string][] = [
  ["fg", "bg", "body text"],
  ["muted", "bg", "notes, the live line"],
  ["muted", "card", "labels in cards and tables"],
  ["muted", "#efefeb", "table headings"],
  ["accent", "bg", "links"],
  ["accent", "card", "links in tables, secondary buttons"],
  ["#fff", "accent", "primary buttons"],
  ["ok", "card", "settled badges"],
  ["info", "card", "pending badges"],
  ["warn", "card", "failed badges"],
  ["bad", "card", "dead badges"],
  ["bad", "bg", "errors"],
  ["#dfe7ff", "#16213e", "navigation links"],
  ["#fff", "#2f4a8a", "the current view's link"],
  ["#e8eaed", "#101418", "payload and stacks"],
  ["fg", "#fff4c2", "a new row's highlight"],
];

test("the dashboard's colours keep 4.5:1 contrast wherever text sits on them", () => {
  for (const [text, background, where] of PAIRS) {
    const ratio = contrast(colour(text), colour(background));
    assert.ok(ratio >= 4.5, `${where}: ${text} on ${background} is ${ratio.toFixed(2)}:1`);
  }
});

test("contrast() matches WCAG's own examples: black on white 21:1, #767676 on white 4.54:1", () => {
  assert.equal(contrast("#000", "#fff").toFixed(0), "21");
  assert.equal(contrast("#767676", "#ffffff").toFixed(2), "4.54");
});
