import {
  type BackfillCounts,
  type BackfillFailure,
  type BackfillResult,
  backfillVersions,
} from "../../backfill/versions.js";
import { createPool } from "../../db/pool.js";
import { type VersionUnit, versionUnitOf } from "../../ledger/version.js";
import type { CommandLedger } from "../database.js";
import { CliError } from "../errors.js";
import { oneOf, parseCount } from "../events/args.js";
import { parseOptions } from "../options.js";
import { withLedger } from "../events/with-ledger.js";
import type { Command } from "./types.js";

const HELP = `Usage: hookledger backfill-versions --sql QUERY [--entity-type TYPE] [options]

Seeds the worker's version guard (ctx.advance) with the versions your app's tables already hold, so that after a
switch from processing webhooks inline to the worker, an event older than what the app applied settles 'stale'.
The query runs on the app's database in a read-only transaction and returns two columns, (id, version), or three,
(entity_type, id, version). A stored version is never lowered; an equal one is kept (equal versions still apply).
Running it again is safe.

Versions are compared with the provider's: numbers are stored as given, so return them in the provider's scale.
Stripe versions an entity by the event's 'created', in seconds: floor(extract(epoch from updated_at)).
Shopify, Paddle and Standard Webhooks use milliseconds. Dates (timestamptz) need --source or --unit.
The entity type is the provider's: Stripe's data.object.object (subscription, customer, invoice), Shopify's topic
resource (orders, products), Paddle's and Standard Webhooks' type prefix (subscription).

Options:
  --sql QUERY              the query on the app's database (required)
  --entity-type TYPE       the entity type, for a two-column query
  --source NAME            the configured source the entities' events come from: its provider decides what a
                           date counts in (stripe: seconds, others: milliseconds); recorded with each version
                           (default: 'backfill')
  --unit s|ms              what dates count in (default: from --source)
  --app-database-url URL   where the query runs (default: the ledger's database, DATABASE_URL)
  --batch N                entities per statement (default: 1000)
  --dry-run                count what would change; write nothing
  --json                   print the counts as JSON
  --config FILE            configuration module (default: ./hookledger.config.mjs, else the demo)
  -h, --help               show this help

Examples:
  hookledger backfill-versions --entity-type subscription --source stripe --dry-run \\
    --sql "select stripe_id, floor(extract(epoch from updated_at)) from subscriptions"
  hookledger backfill-versions --entity-type subscription --source stripe \\
    --sql "select stripe_id, updated_at from subscriptions"
  hookledger backfill-versions --source shopify --app-database-url postgres://app@db:5432/shop \\
    --sql "select 'orders', shopify_id, updated_at from orders union all select 'products', shopify_id, updated_at from products"
`;

const OPTIONS = {
  sql: { type: "string" },
  "entity-type": { type: "string" },
  source: { type: "string" },
  unit: { type: "string" },
  "app-database-url": { type: "string" },
  batch: { type: "string" },
  "dry-run": { type: "boolean" },
  json: { type: "boolean" },
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** `hookledger backfill-versions`: see {@link HELP}. */
export const command: Command = {
  summary: "seed the version guard from the app's tables before the worker takes over",
  async run(args, io) {
    const { values } = parseOptions("backfill-versions", args, OPTIONS);
    if (values.help) {
      io.out(HELP);
      return 0;
    }
    if (values.sql === undefined || values.sql.trim() === "") {
      throw new CliError(
        `backfill-versions needs --sql, e.g. --sql "select stripe_id, floor(extract(epoch from updated_at)) from subscriptions"; see \`hookledger backfill-versions --help\``,
        2,
      );
    }
    const sql = values.sql;
    const batchSize = values.batch === undefined ? 1000 : parseCount("--batch", values.batch, 100_000);
    const unitFlag =
      values.unit === undefined ? undefined : oneOf("--unit", values.unit, ["s", "ms"] as const);
    const progress = io.isTTY && !values.json;
    const result = await withLedger(values.config, async (db) => {
      const unit = unitFlag ?? sourceUnit(db, values.source);
      const appPool =
        values["app-database-url"] === undefined
          ? undefined
          : createPool({ connectionString: values["app-database-url"], role: "admin", max: 1 });
      try {
        return await backfillVersions({
          pool: db.pool,
          schema: db.ledger.schema,
          sql,
          batchSize,
          dryRun: values["dry-run"] === true,
          ...(values["entity-type"] !== undefined && { entityType: values["entity-type"] }),
          ...(values.source !== undefined && { source: values.source }),
          ...(unit !== undefined && { unit }),
          ...(appPool && { appPool }),
          ...(progress && { onProgress: (c: BackfillCounts) => io.err(`\rread ${c.read} rows   `) }),
        });
      } finally {
        await appPool?.end();
      }
    });
    if (progress) io.err("\n");
    if (!result.ok) {
      const written =
        result.inserted + result.raised > 0 && !result.dryRun
          ? ` (the ${result.inserted + result.raised} versions written before it stay; running again is safe)`
          : "";
      throw new CliError(`${CLI_FIX[result.reason] ?? result.detail}${written}`, 2);
    }
    io.out(values.json ? `${JSON.stringify(result, null, 2)}\n` : formatResult(result));
    return 0;
  },
};

function sourceUnit(db: CommandLedger, name: string | undefined): VersionUnit | undefined {
  if (name === undefined) return undefined;
  const source = db.config.sources.find((s) => s.name === name);
  if (!source) {
    const names = db.config.sources.map((s) => s.name).join(", ");
    throw new CliError(
      `--source '${name}' is not a configured source (configured: ${names}); name one, or give --unit s|ms instead`,
      2,
    );
  }
  return versionUnitOf(source.provider.name);
}

// The library's fix names its options; a CLI user knows them as flags.
const CLI_FIX: Partial<Record<BackfillFailure, string>> = {
  entity_type_missing:
    "the query returns (id, version) and no --entity-type is given: pass --entity-type TYPE, or return the entity type as the query's first column",
  unit_missing:
    "the query returns dates: pass --source NAME (its provider decides: stripe counts seconds, the others milliseconds) or --unit s|ms, or return numbers in the provider's scale",
};

function formatResult(r: BackfillResult & { ok: true }): string {
  const n = (x: number) => x.toLocaleString("en");
  const verb = r.dryRun ? "would seed" : "seeded";
  return `${r.dryRun ? "dry run: " : ""}${verb} the version guard from ${n(r.read)} rows: ${n(r.inserted)} new, ${n(r.raised)} raised, ${n(r.kept)} kept (stored version equal or higher), ${n(r.skipped)} skipped (no id or version)\n`;
}
