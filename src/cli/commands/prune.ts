import { settledSources } from "../../ledger/prune.js";
import { PruneRefused, type PruneReport, runPrune } from "../../prune/run.js";
import { defaultTombstoneHorizonMs, type PruneSource } from "../../prune/windows.js";
import { openLedger } from "../database.js";
import { CliError } from "../errors.js";
import { durationOption, parseOptions } from "../options.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger prune --older-than DUR [options]

Deletes settled events settled longer ago than DUR, in batches, keeping a tombstone of each dedupe key so a late
redelivery or replay is still answered as a duplicate. Pending, failed, dead and inline events are never pruned.
A horizon shorter than a source's provider replay window is refused (stripe 30d, paddle 90d, awardee 30d,
standard 30d, github 7d, shopify 7d, slack 1d, generic or unconfigured 90d) unless --force.

Options:
  --older-than DUR             prune rows settled longer ago than this, e.g. 90d (required)
  --source NAME                only this source (repeatable; default: configured sources and any in the ledger)
  --tombstones-older-than DUR  forget tombstones of events received longer ago (default: the larger of 365d
                               and twice --older-than)
  --batch-size N               rows per statement (default: 1000)
  --duty F                     share of the time its statements may take, above 0 to 1: below 1 it waits
                               between batches, leaving Postgres to claims and the worker (default: 1)
  --dry-run                    count what would go; delete nothing
  --force                      prune inside a provider's replay window
  --json                       print the report as JSON
  --config FILE                configuration module (default: ./hookledger.config.mjs, else the demo)
  -h, --help                   show this help

Examples:
  hookledger prune --older-than 90d --dry-run
  hookledger prune --older-than 90d --source stripe --json
  hookledger prune --older-than 14d --source github --tombstones-older-than 180d
`;

/** `hookledger prune`: see {@link HELP}. */
export const command: Command = {
  summary: "delete old settled events in batches, keeping tombstones of their dedupe keys",
  async run(args, io) {
    const { values } = parse(args);
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    if (values["older-than"] === undefined) {
      throw new CliError("prune needs --older-than, e.g. --older-than 90d; see `hookledger prune --help`", 2);
    }
    const olderThanMs = durationOption("--older-than", values["older-than"]);
    const tombstonesOlderThanMs =
      values["tombstones-older-than"] === undefined
        ? defaultTombstoneHorizonMs(olderThanMs)
        : durationOption("--tombstones-older-than", values["tombstones-older-than"]);
    const batchSize = values["batch-size"] === undefined ? 1000 : Number(values["batch-size"]);
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
      throw new CliError(`--batch-size '${values["batch-size"]}' is not a whole number from 1 to 100000`, 2);
    }
    const duty = values.duty === undefined ? 1 : Number(values.duty);
    if (!(duty > 0 && duty <= 1)) {
      throw new CliError(`--duty '${values.duty}' is not a number above 0 and at most 1 (e.g. 0.5)`, 2);
    }
    const db = await openLedger(values.config);
    try {
      const configured = new Map(db.config.sources.map((s) => [s.name, s.provider.name]));
      const names = values.source ?? [
        ...new Set([...configured.keys(), ...(await settledSources(db.pool, db.ledger))]),
      ];
      const sources: PruneSource[] = names.map((name) => ({ name, provider: configured.get(name) }));
      const progress = io.isTTY && !values.json;
      const report = await runPrune(db.pool, db.ledger, {
        sources,
        olderThanMs,
        tombstonesOlderThanMs,
        batchSize,
        duty,
        dryRun: values["dry-run"] === true,
        force: values.force === true,
        ...(progress && {
          onProgress: (p) =>
            io.err(`\rpruning ${p.source}: ${p.pruned} rows deleted, ${p.expired} tombstones expired   `),
        }),
      }).catch((error: unknown) => {
        if (error instanceof PruneRefused) throw new CliError(error.message, 2);
        throw error;
      });
      if (progress) io.err("\n");
      io.out(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
      return 0;
    } finally {
      await db.close();
    }
  },
};

function formatReport(report: PruneReport): string {
  const verb = report.dryRun ? "would delete" : "deleted";
  const lines = report.sources.map((s) => `  ${s.source}: ${s.pruned.toLocaleString("en")} settled rows`);
  return [
    `${report.dryRun ? "dry run: " : ""}${verb} ${report.pruned.toLocaleString("en")} settled rows settled before ${report.before}`,
    ...lines,
    `${verb} ${report.tombstonesExpired.toLocaleString("en")} tombstones of events received before ${report.tombstonesBefore}`,
    ...(report.partitionsDropped.length > 0
      ? [`dropped ${report.partitionsDropped.length} day partitions of event bodies`]
      : []),
    "",
  ].join("\n");
}

function parse(args: string[]) {
  return parseOptions("prune", args, {
    "older-than": { type: "string" },
    "tombstones-older-than": { type: "string" },
    source: { type: "string", multiple: true },
    "batch-size": { type: "string" },
    duty: { type: "string" },
    "dry-run": { type: "boolean" },
    force: { type: "boolean" },
    json: { type: "boolean" },
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
}
