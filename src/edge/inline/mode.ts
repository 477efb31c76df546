import type { InlineMode } from "./types.js";

/**
 * The environment variable that flips the inline guard between `shadow` and `enforce`.
 *
 * @example
 * process.env[MODE_VARIABLE] = "enforce"; // then createInlineGuard({ ... }).mode === "enforce"
 */
export const MODE_VARIABLE = "HOOKLEDGER_MODE";

const MODES: readonly InlineMode[] = ["shadow", "enforce"];

/**
 * The inline guard's mode: the explicit setting, else `HOOKLEDGER_MODE`, else `shadow` (the safe default: a
 * retrofit that only observes). Anything else throws, naming where the value came from and the values allowed.
 *
 * @example
 * resolveInlineMode(undefined, { HOOKLEDGER_MODE: "enforce" }); // "enforce"
 * resolveInlineMode(undefined, {}); // "shadow"
 */
export function resolveInlineMode(
  mode: string | undefined,
  environment: NodeJS.ProcessEnv = process.env,
): InlineMode {
  const fromEnv = environment[MODE_VARIABLE];
  const [where, value] =
    mode !== undefined
      ? ["the inline guard's mode option", mode]
      : fromEnv !== undefined && fromEnv.trim() !== ""
        ? [`the environment variable ${MODE_VARIABLE}`, fromEnv.trim()]
        : ["the default", "shadow"];
  if ((MODES as readonly string[]).includes(value)) return value as InlineMode;
  throw new Error(
    `${where} is ${JSON.stringify(value)}; set it to "shadow" (process every delivery, count duplicates as would-skip) or "enforce" (answer duplicates without the handler)`,
  );
}
