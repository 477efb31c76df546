import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { GithubDelivery } from "../../src/replay/github-api.js";

/** A canned answer served instead of the normal one. */
export interface FakeAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: unknown;
}

/** A request the fake received. */
export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly authorization: string | undefined;
}

/**
 * A local stand-in for GitHub's hook deliveries API: `GET {hook}/deliveries` (newest first, `per_page` ≤ 100,
 * cursor pagination through the `Link` header as GitHub does it) and `POST {hook}/deliveries/{id}/attempts` → 202,
 * where `{hook}` is `/repos/{owner}/{repo}/hooks/{id}`, `/orgs/{org}/hooks/{id}` or `/app/hook`.
 */
export interface FakeGithub {
  /** The API base, for HOOKLEDGER_GITHUB_API_BASE. */
  readonly url: string;
  readonly requests: FakeRequest[];
  /** Delivery ids redelivered, in request order. */
  readonly redelivered: number[];
  /** Sets a hook's deliveries (sorted newest first by the fake). */
  hook(path: string, deliveries: GithubDelivery[]): void;
  /** Answers the next requests whose method and path match with `answers`, in order, then normally again. */
  failNext(method: string, pathPattern: RegExp, ...answers: FakeAnswer[]): void;
  close(): Promise<void>;
}

/**
 * Starts the fake on 127.0.0.1 and a free port; it accepts only `token` (as `token …` or `bearer …`).
 *
 * @example
 * const gh = await startFakeGithub("ghp_test"); gh.hook("/repos/octo/app/hooks/1", [delivery("g1", 5, false)]);
 */
export async function startFakeGithub(token: string): Promise<FakeGithub> {
  const hooks = new Map<string, GithubDelivery[]>();
  const failures: { method: string; pattern: RegExp; answers: FakeAnswer[] }[] = [];
  const requests: FakeRequest[] = [];
  const redelivered: number[] = [];
  let base = "";

  const send = (res: ServerResponse, answer: FakeAnswer) => {
    res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
    res.end(answer.body === undefined ? "" : JSON.stringify(answer.body));
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", base);
    const method = req.method ?? "GET";
    requests.push({
      method,
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
    });
    const failure = failures.find(
      (f) => f.method === method && f.pattern.test(url.pathname) && f.answers.length,
    );
    const canned = failure?.answers.shift();
    if (canned) return send(res, canned);
    const auth = req.headers.authorization?.replace(/^(token|bearer) /i, "");
    if (auth !== token) return send(res, { status: 401, body: { message: "Bad credentials" } });

    const list = /^(.*)\/deliveries$/.exec(url.pathname);
    if (method === "GET" && list?.[1] && hooks.has(list[1])) {
      const all = hooks.get(list[1]) ?? [];
      const perPage = Math.min(Number(url.searchParams.get("per_page") ?? 30), 100);
      const offset = Number(/^v1_(\d+)$/.exec(url.searchParams.get("cursor") ?? "")?.[1] ?? 0);
      const page = all.slice(offset, offset + perPage);
      const headers: Record<string, string> = {};
      if (offset + perPage < all.length) {
        const next = new URL(url.pathname, base);
        next.searchParams.set("per_page", String(perPage));
        next.searchParams.set("cursor", `v1_${offset + perPage}`);
        headers.link = `<${next.href}>; rel="next"`;
      }
      return send(res, { status: 200, headers, body: page });
    }
    const attempt = /^(.*)\/deliveries\/(\d+)\/attempts$/.exec(url.pathname);
    if (
      method === "POST" &&
      attempt?.[1] &&
      hooks.get(attempt[1])?.some((d) => d.id === Number(attempt[2]))
    ) {
      redelivered.push(Number(attempt[2]));
      return send(res, { status: 202, body: {} });
    }
    send(res, { status: 404, body: { message: "Not Found" } });
  };

  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => handle(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    redelivered,
    hook(path, deliveries) {
      hooks.set(
        path,
        [...deliveries].sort(
          (a, b) => Date.parse(b.delivered_at) - Date.parse(a.delivered_at) || b.id - a.id,
        ),
      );
    },
    failNext(method, pattern, ...answers) {
      failures.push({ method, pattern, answers });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let nextId = 1_000_000;

/**
 * A delivery attempt `minutesAgo` minutes before `now` (default: the wall clock): `ok` answers "OK"/200, otherwise
 * "Invalid HTTP Response: 503".
 *
 * @example
 * gh.hook("/app/hook", [delivery("g1", 10, false), delivery("g1", 2, true)]);
 */
export function delivery(
  guid: string,
  minutesAgo: number,
  ok: boolean,
  { id = nextId++, now = Date.now() }: { id?: number; now?: number } = {},
): GithubDelivery {
  return {
    id,
    guid,
    delivered_at: new Date(now - minutesAgo * 60_000).toISOString(),
    status: ok ? "OK" : "Invalid HTTP Response: 503",
    status_code: ok ? 200 : 503,
    event: "push",
    action: null,
    redelivery: false,
  };
}
