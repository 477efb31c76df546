import { formatReport, formatReportJson } from "../../replay/report.js";
import { replayStripe } from "../../replay/stripe.js";
import { loadConfig } from "../config.js";
import { openLedger } from "../database.js";
import { CliError } from "../errors.js";
import { parseOptions, timeOption } from "../options.js";
import type { CommandIO } from "./types.js";

/** `replay stripe` re-delivers a window; `reconcile stripe` finds and adds only what the ledger lacks. */
export type StripeCommandKind = "replay" | "reconcile";

const RECONCILE_OPTIONS = {
  source: { type: "string" },
  since: { type: "string" },
  "dry-run": { type: "boolean" },
  json: { type: "boolean" },
  "api-key-env": { type: "string" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;
const OPTIONS = {
  ...RECONCILE_OPTIONS,
  until: { type: "string" },
  type: { type: "string", multiple: true },
  "undelivered-only": { type: "boolean" },
  via: { type: "string" },
} as const;

/**
 * Runs `hookledger replay stripe …` or `hookledger reconcile stripe …` (arguments after `stripe`); `now` is the
 * clock `--since`/`--until` and Stripe's 30-day window are measured from.
 *
 * @example
 * await runStripeCommand("replay", ["--source", "stripe", "--since", "2h", "--dry-run"], io, help);
 */
export async function runStripeCommand(
  kind: StripeCommandKind,
  args: string[],
  io: CommandIO,
  help: string,
  { now = Date.now() }: { now?: number } = {},
): Promise<number> {
  // reconcile takes a subset: parsing with it first names exactly what reconcile accepts.
  if (kind === "reconcile") parseOptions("reconcile stripe", args, RECONCILE_OPTIONS);
  const { values } = parseOptions(`${kind} stripe`, args, OPTIONS);
  if (values.help) {
    io.out(help);
    return 0;
  }
  if (!values.source) throw new CliError(`--source NAME is required: the Stripe source to ${kind}`, 2);
  if (!values.since) throw new CliError("--since is required, e.g. --since 2h or --since 2025-06-01", 2);
  const since = timeOption("--since", values.since, now);
  const until = values.until ? timeOption("--until", values.until, now) : new Date(now);
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
      now,
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
