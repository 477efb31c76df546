import { type GithubHookTarget, githubDeliveriesApi } from "../../replay/github-api.js";
import { replayGithubDeliveries } from "../../replay/github-run.js";
import { formatReport, formatReportJson } from "../../replay/report.js";
import { openLedger } from "../database.js";
import { CliError } from "../errors.js";
import { parseOptions, timeOption } from "../options.js";
import type { CommandIO } from "./types.js";

const HELP = `hookledger replay github: ask GitHub to redeliver the webhook deliveries the ledger lacks

Usage:
  hookledger replay github --source NAME (--repo OWNER/NAME | --org ORG) --hook-id N [options]
  hookledger replay github --source NAME --app [options]

Lists the hook's deliveries (newest first, back to --since), groups them by delivery guid
(X-GitHub-Delivery), and for each guid with no attempt answered "OK" and not already in the ledger,
asks GitHub to redeliver its newest attempt. GitHub re-signs redeliveries: no replay token is needed.

Options:
  --source NAME      the configured GitHub source whose ledger rows to compare against
  --repo OWNER/NAME  a repository's webhook (token scope "admin:repo_hook")
  --org ORG          an organisation's webhook (token scope "admin:org_hook")
  --app              the GitHub App's webhook (GET /app/hook/deliveries), authenticated by the app's JWT
  --hook-id N        the webhook's id (repo and org): \`gh api repos/OWNER/NAME/hooks\`
  --since T          how far back: a duration (90m, 24h, 3d) or an ISO 8601 time (default: 3d,
                     GitHub's redelivery window; an older --since is clamped to it)
  --token-env NAME   the environment variable holding the token (default: GITHUB_TOKEN, with
                     --app GITHUB_APP_JWT); the token is never printed
  --dry-run          list what would be redelivered, request nothing
  --json             print the report as JSON
  --config FILE      configuration module (default: ./hookledger.config.mjs, else the demo)
  -h, --help         show this help

Exit code: 0 when every redelivery was accepted, 1 when any failed, 2 for a usage mistake.

Examples:
  GITHUB_TOKEN=ghp_… hookledger replay github --source github --repo octo/app --hook-id 123456 --since 6h
  hookledger replay github --source github --org octo --hook-id 98765 --dry-run
  GITHUB_APP_JWT=$(./make-jwt) hookledger replay github --source github --app --json
`;

/**
 * `hookledger replay github`: parses its arguments, lists the hook's deliveries, and asks GitHub to redeliver each
 * event with no successful attempt that the ledger lacks; prints the report (text or `--json`) and returns the exit
 * code. Usage mistakes throw a `CliError` and GitHub's refusals a `GithubApiError`, each naming the fix. The API
 * base is HOOKLEDGER_GITHUB_API_BASE when set (GitHub Enterprise Server, tests), else api.github.com. `now` is the
 * clock `--since` and the 3-day window are measured from.
 *
 * @example
 * const code = await replayGithubCommand(["--source", "github", "--repo", "octo/app", "--hook-id", "12"], {
 *   out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text), isTTY: false,
 * });
 */
export async function replayGithubCommand(
  args: string[],
  io: CommandIO,
  { now = Date.now() }: { now?: number } = {},
): Promise<number> {
  const values = parse(args);
  if (values.help) {
    io.out(HELP);
    return 0;
  }
  const source = required(values.source, "--source NAME (the configured GitHub source)");
  const target = hookTarget(values);
  const since = values.since === undefined ? undefined : timeOption("--since", values.since, now);
  if (since !== undefined && since.getTime() > now) {
    throw new CliError(`--since '${values.since}' is in the future; give a past time`, 2);
  }
  const tokenEnv = values["token-env"] ?? (target.kind === "app" ? "GITHUB_APP_JWT" : "GITHUB_TOKEN");
  const token = process.env[tokenEnv]?.trim();
  if (!token) {
    throw new CliError(
      `no token in ${tokenEnv}: set it to ${target.kind === "app" ? "the app's JWT" : "a token with admin:repo_hook (repo) or admin:org_hook (org) scope"}, or name another variable with --token-env`,
      2,
    );
  }
  const db = await openLedger(values.config);
  try {
    const configured = db.config.sources.find((s) => s.name === source);
    if (configured?.provider.name !== "github") {
      const github = db.config.sources.filter((s) => s.provider.name === "github").map((s) => s.name);
      throw new CliError(
        `--source ${source} is ${configured ? `a ${configured.provider.name} source` : "not configured"}; give a GitHub source${github.length ? ` (${github.join(", ")})` : ""}`,
        2,
      );
    }
    const dryRun = values["dry-run"] === true;
    const report = await replayGithubDeliveries({
      api: githubDeliveriesApi(target, token, { baseUrl: process.env.HOOKLEDGER_GITHUB_API_BASE }),
      db: db.pool,
      ledger: db.ledger,
      source,
      ...(since !== undefined && { since }),
      ...(values.since !== undefined && { sinceText: values.since }),
      now,
      dryRun,
      io: { out: io.out, isTTY: io.isTTY && values.json !== true },
    });
    report.phases.unshift(
      `list: ${describe(target)}, deliveries since ${report.window?.since.toISOString()}`,
    );
    io.out(values.json ? formatReportJson(report) : formatReport(report, { listNew: true }));
    return report.failed > 0 ? 1 : 0;
  } finally {
    await db.close();
  }
}

type Values = ReturnType<typeof parse>;

function parse(args: string[]) {
  return parseOptions("replay github", args, {
    source: { type: "string" },
    repo: { type: "string" },
    org: { type: "string" },
    app: { type: "boolean" },
    "hook-id": { type: "string" },
    since: { type: "string" },
    "token-env": { type: "string" },
    "dry-run": { type: "boolean" },
    json: { type: "boolean" },
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
  }).values;
}

function required(value: string | undefined, what: string): string {
  if (value === undefined || value === "") {
    throw new CliError(`missing ${what}; see \`hookledger replay github --help\``, 2);
  }
  return value;
}

function hookTarget(values: Values): GithubHookTarget {
  const chosen = [values.repo && "--repo", values.org && "--org", values.app && "--app"].filter(Boolean);
  if (chosen.length !== 1) {
    throw new CliError(
      `give exactly one of --repo OWNER/NAME, --org ORG or --app${chosen.length ? ` (got ${chosen.join(" and ")})` : ""}`,
      2,
    );
  }
  if (values.app) {
    if (values["hook-id"] !== undefined) {
      throw new CliError("--hook-id does not apply to --app (an app has one webhook); drop it", 2);
    }
    return { kind: "app" };
  }
  const idText = required(values["hook-id"], "--hook-id N (list hooks with `gh api repos/OWNER/NAME/hooks`)");
  const hookId = Number(idText);
  if (!/^\d{1,18}$/.test(idText) || !Number.isSafeInteger(hookId) || hookId <= 0) {
    throw new CliError(`--hook-id '${idText}' is not a webhook id; give the hook's numeric id`, 2);
  }
  if (values.org) return { kind: "org", org: values.org, hookId };
  const [owner, repo, extra] = (values.repo ?? "").split("/");
  if (!owner || !repo || extra !== undefined) {
    throw new CliError(`--repo '${values.repo}' is not OWNER/NAME; give e.g. --repo octo/app`, 2);
  }
  return { kind: "repo", owner, repo, hookId };
}

function describe(target: GithubHookTarget): string {
  if (target.kind === "repo") return `hook ${target.hookId} of ${target.owner}/${target.repo}`;
  if (target.kind === "org") return `hook ${target.hookId} of organisation ${target.org}`;
  return "the app's webhook";
}
