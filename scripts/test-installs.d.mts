// Types of scripts/test-installs.mjs, for the tests that import it (tsconfig has no allowJs).
type Env = NodeJS.ProcessEnv;
type Log = (line: string) => void;

export function onPath(name: string, env?: Env): string | undefined;
export function run(
  argv: string[],
  options?: { env?: Env; input?: string },
): Promise<{ ok: boolean; out: string; stdout: string }>;
export function versionOf(path: string, env?: Env): Promise<string | undefined>;
export function rootPrefix(options?: { uid?: number | undefined; env?: Env }): Promise<string[] | undefined>;
export function aptInstall(
  pkg: string,
  options: { root: string[]; env?: Env; service?: string },
): Promise<{ ok: boolean; out: string }>;
export function ensureDebianBinary(
  binary: string,
  pkg: string,
  options?: { env?: Env; uid?: number | undefined; log?: Log; service?: string },
): Promise<
  | { path: string; version: string | undefined; installed: boolean; missing?: undefined }
  | { missing: string; path?: undefined }
>;
export function testChromium(options?: {
  env?: Env;
  uid?: number | undefined;
  log?: Log;
  systemPath?: string;
}): Promise<
  | { path: string; version: string; error?: undefined; skipped?: undefined }
  | { skipped: string; error?: undefined; path?: undefined }
  | { error: string; skipped?: undefined; path?: undefined }
>;
