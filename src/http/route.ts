/**
 * Matches `{basePath}/:source` and returns the decoded source name, or `undefined`.
 *
 * @example
 * sourceFromPath("/webhooks/stripe", "/webhooks"); // "stripe"
 */
export function sourceFromPath(pathname: string, basePath: string): string | undefined {
  const prefix = `${basePath.replace(/\/+$/, "")}/`;
  if (!pathname.startsWith(prefix)) return undefined;
  const rest = pathname.slice(prefix.length).replace(/\/$/, "");
  if (rest.length === 0 || rest.includes("/")) return undefined;
  try {
    return decodeURIComponent(rest);
  } catch {
    return undefined;
  }
}
