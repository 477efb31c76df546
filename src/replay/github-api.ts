import type { Octokit } from "@octokit/rest";
import { importOptional } from "../optional.js";

/** Whose hook to replay: a repository's or an organisation's (by hook id), or a GitHub App's. */
export type GithubHookTarget =
  | { readonly kind: "repo"; readonly owner: string; readonly repo: string; readonly hookId: number }
  | { readonly kind: "org"; readonly org: string; readonly hookId: number }
  | { readonly kind: "app" };

/** One delivery attempt as GitHub lists it (`GET …/hooks/…/deliveries`), newest first. */
export interface GithubDelivery {
  readonly id: number;
  /** The `X-GitHub-Delivery` header: shared by every attempt of one event, the ledger's dedupe key. */
  readonly guid: string;
  readonly delivered_at: string;
  /** `"OK"` when the receiver answered 2xx. */
  readonly status: string;
  readonly status_code: number;
  readonly event: string;
  readonly action?: string | null;
  readonly redelivery: boolean;
}

/** The API calls `replay github` needs, over one authenticated Octokit. */
export interface GithubDeliveriesApi {
  /** Pages the hook's deliveries, newest first (`per_page` 100, cursor pagination from the `Link` header). */
  pages(): AsyncIterable<readonly GithubDelivery[]>;
  /** Asks GitHub to redeliver one delivery (`POST …/deliveries/{id}/attempts` → 202); GitHub re-signs it. */
  redeliver(deliveryId: number): Promise<void>;
}

/** Retries of a 5xx or rate-limited request before it is reported. */
const RETRIES = 3;
/** The longest wait a `retry-after` or rate-limit reset may ask for before the request is reported instead. */
const MAX_WAIT_MS = 60_000;

/**
 * An Octokit for the deliveries API: silent (its request log would print the `authorization` header at debug
 * level), with `baseUrl` from HOOKLEDGER_GITHUB_API_BASE when set (GitHub Enterprise Server, tests), and retries of
 * 5xx answers and secondary rate limits written here, since @octokit/plugin-retry and -throttling are not
 * dependencies.
 *
 * @example
 * const api = githubDeliveriesApi({ kind: "repo", owner: "octo", repo: "app", hookId: 12 }, process.env.GITHUB_TOKEN ?? "");
 * for await (const page of api.pages()) console.log(page.length);
 */
export function githubDeliveriesApi(
  target: GithubHookTarget,
  token: string,
  options: { readonly baseUrl?: string | undefined; readonly retryBaseMs?: number } = {},
): GithubDeliveriesApi {
  let client: Promise<Octokit> | undefined;
  // The SDK loads at the first request, so `import "hookledger"` never loads it.
  const octokit = () => {
    client ??= importOptional("@octokit/rest", () => import("@octokit/rest"), {
      feature: "replay github",
    }).then(({ Octokit }) => {
      const quiet = () => {};
      const instance = new Octokit({
        auth: token,
        userAgent: "hookledger-replay",
        log: { debug: quiet, info: quiet, warn: quiet, error: quiet },
        ...(options.baseUrl && { baseUrl: options.baseUrl.replace(/\/+$/, "") }),
      });
      const retryBaseMs = options.retryBaseMs ?? 500;
      instance.hook.wrap("request", async (request, requestOptions) => {
        for (let attempt = 0; ; attempt++) {
          try {
            return await request(requestOptions);
          } catch (error) {
            const wait = retryWaitMs(error as HttpError, attempt, retryBaseMs);
            if (wait === undefined || attempt >= RETRIES) throw explain(error as HttpError, target);
            await new Promise((resolve) => setTimeout(resolve, wait));
          }
        }
      });
      return instance;
    });
    return client;
  };
  const base =
    target.kind === "repo"
      ? { route: "/repos/{owner}/{repo}/hooks/{hook_id}", params: { owner: target.owner, repo: target.repo } }
      : target.kind === "org"
        ? { route: "/orgs/{org}/hooks/{hook_id}", params: { org: target.org } }
        : { route: "/app/hook", params: {} };
  const params = { ...base.params, ...(target.kind !== "app" && { hook_id: target.hookId }) };
  return {
    async *pages() {
      const pages = (await octokit()).paginate.iterator(`GET ${base.route}/deliveries`, {
        ...params,
        per_page: 100,
      });
      for await (const page of pages) yield page.data as unknown as GithubDelivery[];
    },
    async redeliver(deliveryId) {
      await (await octokit()).request(`POST ${base.route}/deliveries/{delivery_id}/attempts`, {
        ...params,
        delivery_id: deliveryId,
      });
    },
  };
}

interface HttpError extends Error {
  status?: number;
  response?: { headers?: Record<string, string | number | undefined> };
}

/** How long to wait before retrying, or `undefined` when the error is not worth a retry. */
function retryWaitMs(error: HttpError, attempt: number, baseMs: number): number | undefined {
  const status = error.status ?? 0;
  const headers = error.response?.headers ?? {};
  const retryAfter = Number(headers["retry-after"]);
  const limited = status === 403 || status === 429;
  // Secondary rate limits answer 403 or 429 with `retry-after` (seconds), as a 503 may; the primary limit answers
  // with `x-ratelimit-remaining: 0` and the reset time (epoch seconds). docs.github.com "Rate limits for the REST API".
  if ((limited || status >= 500) && headers["retry-after"] !== undefined && retryAfter >= 0) {
    return retryAfter * 1000 <= MAX_WAIT_MS ? retryAfter * 1000 : undefined;
  }
  if (limited && String(headers["x-ratelimit-remaining"]) === "0") {
    const wait = Number(headers["x-ratelimit-reset"]) * 1000 - Date.now();
    return wait <= MAX_WAIT_MS ? Math.max(wait, 0) : undefined;
  }
  if (status === 429 || status >= 500) return baseMs * 2 ** attempt;
  return undefined;
}

/** A failure the operator can act on: what GitHub answered, and what to change. */
function explain(error: HttpError, target: GithubHookTarget): Error {
  const status = error.status;
  const detail = `GitHub answered ${status ?? "nothing"}: ${error.message}`;
  const where =
    target.kind === "repo"
      ? `hook ${target.hookId} of ${target.owner}/${target.repo}`
      : target.kind === "org"
        ? `hook ${target.hookId} of organisation ${target.org}`
        : "the app's webhook";
  const scope =
    target.kind === "repo"
      ? 'a classic token with the "admin:repo_hook" scope (fine-grained: "Webhooks" read and write)'
      : target.kind === "org"
        ? 'a classic token with the "admin:org_hook" scope (fine-grained: organisation "Webhooks" read and write)'
        : "a JWT signed with the app's private key (RS256, at most 10 minutes long)";
  if (status === 401) {
    return new GithubApiError(
      status,
      `${detail}; the token was rejected (expired or revoked): give ${scope}`,
    );
  }
  if (status === 403 && !isRateLimit(error)) {
    return new GithubApiError(status, `${detail}; the token may not manage ${where}: give ${scope}`);
  }
  if (status === 404) {
    const fix =
      target.kind === "app"
        ? "check that the JWT is the app's (an installation token cannot list app deliveries)"
        : `check --hook-id (list hooks with \`gh api ${target.kind === "repo" ? `repos/${target.owner}/${target.repo}` : `orgs/${target.org}`}/hooks\`) and that the token can see it: give ${scope}`;
    return new GithubApiError(status, `${detail}; ${where} was not found: ${fix}`);
  }
  if (isRateLimit(error) || (status ?? 0) >= 500) {
    return new GithubApiError(
      status,
      `${detail} (rate limited or unavailable, retried up to ${RETRIES} times); try again later`,
    );
  }
  return new GithubApiError(status, detail);
}

function isRateLimit(error: HttpError): boolean {
  const headers = error.response?.headers ?? {};
  return (
    error.status === 429 ||
    headers["retry-after"] !== undefined ||
    String(headers["x-ratelimit-remaining"]) === "0"
  );
}

/**
 * GitHub refused a request (after the retries of a 5xx or rate limit), naming the problem and the fix; the CLI
 * prints its message alone (exit 1). `status` is `undefined` when GitHub never answered (network failure).
 *
 * @example
 * if (error instanceof GithubApiError && error.status === 401) throw error;
 */
export class GithubApiError extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = "GithubApiError";
  }
}
