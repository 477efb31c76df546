/**
 * What a known field holds: `true` for a value not looked into (text, a number, a `Handlers`, a `pg` Pool), the
 * {@link Fields} of an object, or `[fields]` for a list of such objects. An object is looked into only when it is a
 * plain one, so a string where an `env(…)` could stand, or `false` for a rule turned off, passes as it is.
 */
export type Shape = true | Fields | readonly [Fields];

/** The known fields of one object of the configuration and what each holds. */
export interface Fields {
  readonly [field: string]: Shape;
}

/**
 * Every field of `T` and no other: `const X_FIELDS = { … } satisfies FieldsOf<X>` stops compiling when `X` gains a
 * field the list lacks, or loses one it has, so the list and the type cannot drift apart.
 *
 * @example
 * const RETRY_FIELDS = { maxAttempts: true, baseDelayMs: true, maxDelayMs: true } satisfies FieldsOf<RetryPolicy>;
 */
export type FieldsOf<T> = { readonly [K in keyof Required<T>]: Shape };

/**
 * Every field of `value` (at any depth) that `fields` does not know, each as `{at}.{path}: unknown field; …` with
 * the closest known name, or the known names when none is close.
 *
 * @example
 * unknownFields({ workr: { concurrency: 4 } }, CONFIG_FIELDS, "config");
 * // ["config.workr: unknown field; did you mean worker?"]
 */
export function unknownFields(value: unknown, fields: Fields, at: string): string[] {
  if (!isPlainObject(value)) return [];
  const problems: string[] = [];
  for (const [key, inner] of Object.entries(value)) {
    const path = /^[A-Za-z_$][\w$]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
    const shape = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (shape === undefined) {
      const known = Object.keys(fields);
      const near = closest(key, known);
      const hint = near === undefined ? `known fields: ${known.join(", ")}` : `did you mean ${near}?`;
      problems.push(`${path}: unknown field; ${hint}`);
    } else if (Array.isArray(shape)) {
      if (!Array.isArray(inner)) continue;
      for (const [i, item] of inner.entries())
        problems.push(...unknownFields(item, shape[0], `${path}[${i}]`));
    } else if (shape !== true) {
      problems.push(...unknownFields(inner, shape as Fields, path));
    }
  }
  return problems;
}

/**
 * `value` with only the fields `fields` knows, for a check that would report the others in words of its own.
 *
 * @example
 * knownOnly({ idPointer: "/id", idpointer: "/id" }, GENERIC_FIELDS); // { idPointer: "/id" }
 */
export function knownOnly<T extends object>(value: T, fields: Fields): T {
  return Object.fromEntries(Object.entries(value).filter(([key]) => Object.hasOwn(fields, key))) as T;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

// A typo is a name within a Damerau-Levenshtein distance (case ignored) of 1 for names under 6 characters and of 2
// from 6 on (a third of the length, at most 2): "prot" → port, "maxBodyByts" → maxBodyBytes, but "workr2x" is 3
// edits from worker and gets the list of known fields instead. Ties go to the name listed first.
function closest(key: string, known: readonly string[]): string | undefined {
  const limit = key.length < 6 ? 1 : 2;
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(key.toLowerCase(), name.toLowerCase());
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

// The optimal string alignment distance: insertions, deletions, substitutions and swaps of two adjacent letters.
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] ?? [];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, at(i - 2, j - 2) + 1);
      row[j] = d;
    }
  }
  return at(a.length, b.length);
}
