/**
 * Matches `{basePath}/:source` and returns the decoded source name, or `undefined`.
 *
 * @example
 * sourceFromPath("/webhooks/stripe", "/webhooks"); // "stripe"
 */
export function sourceFromPath(pathname: string, basePath: string): string | undefined {
  return sourceMatcher(basePath)(pathname);
}

/**
 * {@link sourceFromPath} with `basePath` fixed, for a handler that matches every request against the same one.
 *
 * @example
 * const match = sourceMatcher("/webhooks");
 * match("/webhooks/stripe"); // "stripe"
 */
export function sourceMatcher(basePath: string): (pathname: string) => string | undefined {
  const prefix = `${basePath.replace(/\/+$/, "")}/`;
  return (pathname) => {
    if (!pathname.startsWith(prefix)) return undefined;
    const rest = pathname.endsWith("/") ? pathname.slice(prefix.length, -1) : pathname.slice(prefix.length);
    if (rest.length === 0 || rest.includes("/")) return undefined;
    if (!rest.includes("%")) return rest;
    try {
      return decodeURIComponent(rest);
    } catch {
      return undefined;
    }
  };
}

/** A delivery's route: its source, and whether it came in on the replay path. */
export type Route = { readonly source: string; readonly viaReplay: boolean } | undefined;

/**
 * Matches a delivery path: `{basePath}/:source` (a provider's delivery) or `{replayPath}/:source` (a re-POST that
 * carries the replay token instead of a signature).
 *
 * @example
 * routeFromPath("/replay/stripe", "/webhooks", "/replay"); // { source: "stripe", viaReplay: true }
 */
export function routeFromPath(pathname: string, basePath: string, replayPath: string): Route {
  return routeMatcher(basePath, replayPath)(pathname);
}

/**
 * {@link routeFromPath} with both paths fixed: the prefixes are worked out once, not per request.
 *
 * @example
 * const route = routeMatcher("/webhooks", "/replay");
 * route("/webhooks/stripe"); // { source: "stripe", viaReplay: false }
 */
export function routeMatcher(basePath: string, replayPath: string): (pathname: string) => Route {
  const delivery = sourceMatcher(basePath);
  const replay = sourceMatcher(replayPath);
  return (pathname) => {
    const source = delivery(pathname);
    if (source !== undefined) return { source, viaReplay: false };
    const replayed = replay(pathname);
    return replayed === undefined ? undefined : { source: replayed, viaReplay: true };
  };
}

/**
 * The path of a request target, without its query string.
 *
 * @example
 * pathOf("/webhooks/stripe?x=1"); // "/webhooks/stripe"
 */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return "/";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}
