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

/**
 * Matches a delivery path: `{basePath}/:source` (a provider's delivery) or `{replayPath}/:source` (a re-POST that
 * carries the replay token instead of a signature).
 *
 * @example
 * routeFromPath("/replay/stripe", "/webhooks", "/replay"); // { source: "stripe", viaReplay: true }
 */
export function routeFromPath(
  pathname: string,
  basePath: string,
  replayPath: string,
): { readonly source: string; readonly viaReplay: boolean } | undefined {
  const source = sourceFromPath(pathname, basePath);
  if (source !== undefined) return { source, viaReplay: false };
  const replayed = sourceFromPath(pathname, replayPath);
  return replayed === undefined ? undefined : { source: replayed, viaReplay: true };
}
