// jsonTooDeep: the bracket count that settles most bodies at once, and the exact scan behind it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { jsonTooDeep, MAX_JSON_DEPTH } from "../../src/providers/json-depth.js";

const nested = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;

test("jsonTooDeep: nesting of exactly max levels passes, one more is refused, objects and arrays alike", () => {
  assert.equal(jsonTooDeep(nested(MAX_JSON_DEPTH)), false);
  assert.equal(jsonTooDeep(nested(MAX_JSON_DEPTH + 1)), true);
  assert.equal(jsonTooDeep(`${'{"a":'.repeat(3)}1${"}".repeat(3)}`, 2), true);
  assert.equal(jsonTooDeep(`{"a":[{"b":1}]}`, 3), false);
  assert.equal(jsonTooDeep(`{"a":[{"b":[]}]}`, 3), true);
});

test("jsonTooDeep: more brackets than max that never nest deep (siblings, brackets in strings) pass the exact scan", () => {
  const siblings = `[${Array.from({ length: MAX_JSON_DEPTH * 2 }, () => "{}").join(",")}]`;
  assert.equal(jsonTooDeep(siblings), false);
  const inStrings = JSON.stringify({ text: "[{".repeat(MAX_JSON_DEPTH) });
  assert.equal(jsonTooDeep(inStrings), false);
  // An escaped quote does not end the string: the brackets after it are still inside.
  assert.equal(jsonTooDeep(JSON.stringify({ text: `\\"${"[".repeat(10)}` }), 2), false);
  assert.equal(jsonTooDeep(`["\\"", ${nested(3)}]`, 3), true);
});
