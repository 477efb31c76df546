import assert from "node:assert/strict";
import { ConfigError, type HookledgerConfig, resolveConfig } from "hookledger";

/** The problems `resolveConfig` lists for `config` (it must refuse it). */
export function problemsOf(config: HookledgerConfig, environment: NodeJS.ProcessEnv = {}): readonly string[] {
  try {
    resolveConfig(config, environment);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail("expected a ConfigError");
}
