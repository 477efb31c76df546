import { parseArgs } from "node:util";
import type { CommandIO } from "../cli/commands/types.js";
import { loadConfig } from "../cli/config.js";
import { openLedger } from "../cli/database.js";
import { CliError } from "../cli/errors.js";
import { parseDuration } from "../cli/stats.js";
import { formatReport, formatReportJson } from "./report.js";
import { replayStripe } from "./stripe.js";

/** `replay stripe` re-delivers a window; `reconcile stripe` finds and adds only what the ledger lacks. */
export type StripeCommandKind = "replay" | "reconcile";

const OPTIONS = {
  source: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  type: { type: "string", multiple: true },
  "undelivered-only": { type: "boolean" },
  via: { type: "string" },
  "dry-run": { type: "boolean" },
  json: { type: "boolean" },
  "api-key-env": { type: "string" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;
const REPLAY_ONLY = ["until", "type", "undelivered-only", "via"] as const;

/**
 * Parses a `--since`/`--until` value: an ISO date or time (`2025-06-01`, `2025-06-01T12:00:00Z`) or a duration
 * back from now (`40m`, `2h`, `3d`).
 *
 * @example
 * parseTime("2h", "--since", Date.now()); // two hours ago
 */
export function parseTime(text: string, flag: string, now: number): Date {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const ms = Date.parse(text);
    if (Number.isFinite(ms)) return new Date(ms);
  } else if (/^\d+[smhdw]$/.test(text.trim())) {
    return new Date(now - parseDuration(text, flag));
  }
  throw new CliError(
    `${flag} '${text}' is neither a duration (40m, 2h, 3d) nor an ISO date (2025-06-01T12:00:00Z)`,
    2,
  );
}

/**
 * Runs `hookledger replay stripe …` or `hookledger reconcile stripe …` (arguments after `stripe`).
 *
 * @example
 * await runStripeCommand("replay", ["--source", "stripe", "--since", "2h", "--dry-run"], io, help);
 */
export async function runStripeCommand(
  kind: StripeCommandKind,
  args: string[],
  io: CommandIO,
  help: string,
): Promise<number> {
  let values: ReturnType<typeof parse>["values"];
  try {
    values = parse(args).values;
  } catch (error) {
    throw new CliError(`${(error as Error).message}; see \`hookledger ${kind} --help\``, 2);
  }
  if (values.help) {
    io.out(help);
    return 0;
  }
  if (kind === "reconcile") {
    const extra = REPLAY_ONLY.find((name) => values[name] !== undefined);
    if (extra)
      throw new CliError(
        `--${extra} is a replay option; reconcile takes --source, --since, --dry-run, --json`,
        2,
      );
  }
  const now = Date.now();
  if (!values.source) throw new CliError(`--source NAME is required: the Stripe source to ${kind}`, 2);
  if (!values.since) throw new CliError("--since is required, e.g. --since 2h or --since 2025-06-01", 2);
  const since = parseTime(values.since, "--since", now);
  const until = values.until ? parseTime(values.until, "--until", now) : new Date(now);
  if (until <= since) throw new CliError("--until must be later than --since", 2);
  const types = values.type ?? [];
  if (types.length > 20) throw new CliError("--type: Stripe accepts at most 20 event types per list", 2);
  const keyEnv = values["api-key-env"] ?? "STRIPE_API_KEY";
  const apiKey = process.env[keyEnv];
  if (!apiKey) {
    throw new CliError(
      `set ${keyEnv} to a Stripe secret key (sk_…) or a restricted key (rk_…) that can read Events`,
      2,
    );
  }
  const { config, file } = await loadConfig(values.config, { secrets: false });
  const source = config.sources.find((s) => s.name === values.source);
  if (!source) {
    const names = config.sources.map((s) => s.name).join(", ");
    throw new CliError(
      `no source '${values.source}' in ${file ?? "the demo config"}; its sources are ${names}`,
      2,
    );
  }
  if (source.provider.name !== "stripe") {
    throw new CliError(
      `source '${source.name}' is a ${source.provider.name} source; ${kind} stripe needs a stripe one`,
      2,
    );
  }
  const via = values["dry-run"] ? undefined : values.via;
  let token: string | undefined;
  if (via !== undefined) {
    if (!URL.canParse(via))
      throw new CliError(`--via '${via}' is not a URL, e.g. https://hooks.example.com`, 2);
    token = process.env.HOOKLEDGER_REPLAY_TOKEN;
    if (!token)
      throw new CliError("--via needs HOOKLEDGER_REPLAY_TOKEN: set it to the receiver's replay token", 2);
  }
  const apiBase = process.env.HOOKLEDGER_STRIPE_API_BASE;
  const db = via === undefined ? await openLedger(values.config) : undefined;
  try {
    const report = await replayStripe({
      source: source.name,
      api: { apiKey, apiKeyEnv: keyEnv, ...(apiBase && { apiBase }) },
      since,
      until,
      types,
      ...(values["undelivered-only"] && { undeliveredOnly: true }),
      ...(db && { ledger: { db: db.pool, ledger: db.ledger } }),
      ...(via !== undefined && token !== undefined && { via: { url: via, token } }),
      dryRun: values["dry-run"] === true,
      io: { out: io.err, isTTY: io.isTTY && !values.json },
    });
    io.out(
      values.json
        ? formatReportJson(report)
        : formatReport(report, { listNew: kind === "reconcile" || report.dryRun }),
    );
    return report.failed > 0 ? 1 : 0;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError((error as Error).message);
  } finally {
    await db?.close();
  }
}

function parse(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: false, strict: true });
}
