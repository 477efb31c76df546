/**
 * Parses an RFC 6901 JSON pointer into its reference tokens (`~1` is `/`, `~0` is `~`). Only non-empty pointers
 * are accepted: a pointer to the whole document is never an id, a type or a version.
 *
 * @returns the tokens, or `null` when the text is not a pointer.
 * @example
 * parsePointer("/data/event/id"); // ["data", "event", "id"]
 * parsePointer("/a~1b");          // ["a/b"]
 * parsePointer("id");             // null
 */
export function parsePointer(text: string): string[] | null {
  if (!text.startsWith("/") || /~[^01]|~$/.test(text)) return null;
  return text
    .slice(1)
    .split("/")
    .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
}

/**
 * The value a parsed pointer designates in a parsed JSON document, or `undefined` when there is none. Array
 * elements are addressed by their decimal index.
 *
 * @example
 * resolvePointer({ data: { items: [{ id: 7 }] } }, ["data", "items", "0", "id"]); // 7
 */
export function resolvePointer(document: unknown, tokens: readonly string[]): unknown {
  let current = document;
  for (const token of tokens) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d*)$/.test(token)) return undefined;
      current = current[Number(token)];
    } else if (current !== null && typeof current === "object" && Object.hasOwn(current, token)) {
      current = (current as Record<string, unknown>)[token];
    } else {
      return undefined;
    }
  }
  return current;
}

/**
 * JSON text with object keys sorted at every depth, so a sender that re-serialises a body (another key order,
 * other white space, `1.0` for `1`) yields the same text for the same values.
 *
 * @example
 * canonicalJson({ b: 1, a: [true, { d: null, c: "x" }] }); // '{"a":[true,{"c":"x","d":null}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
