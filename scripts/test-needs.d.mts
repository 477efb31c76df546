// Types of scripts/test-needs.mjs, for the tests that import it (tsconfig has no allowJs).
type Env = NodeJS.ProcessEnv;
type Log = (line: string) => void;
type Stop = () => Promise<void>;

export const DEFAULT_DATABASE_URL: string;
export const DEFAULT_REDIS_URL: string;
export function serverPort(): Promise<number>;
export function postgresVersion(
  url: string,
): Promise<{ version: string; error?: undefined } | { error: string; version?: undefined }>;
export function embeddedPostgres(): Promise<{ url: string; version: string; stop: Stop }>;
export function testPostgres(options?: {
  explicitUrl?: string | undefined;
  defaultUrl?: string;
  log?: Log;
}): Promise<
  { url: string; label: string; stop: Stop; error?: undefined } | { error: string; url?: undefined }
>;
export function redisVersion(
  url: string,
): Promise<{ version: string; error?: undefined } | { error: string; version?: undefined }>;
export function privateRedis(
  binary: string,
): Promise<{ url: string; port: number; version: string; stop: Stop }>;
export function testRedis(options?: {
  explicitUrl?: string | undefined;
  defaultUrl?: string;
  env?: Env;
  uid?: number | undefined;
  log?: Log;
}): Promise<
  | { url: string; label: string; stop: Stop; skipped?: undefined }
  | { skipped: string; stop: Stop; url?: undefined }
>;
export function testNodes(options?: {
  env?: Env;
  cacheDir?: string;
  log?: Log;
}): Promise<
  | { nodes: { path: string; version: string }[]; from: string; error?: undefined }
  | { error: string; nodes?: undefined }
>;
