#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { packageFile } from "../files.js";
import { MissingPackageError } from "../optional.js";
import type { Command, CommandIO } from "./commands/types.js";
import { CliError, explainDatabaseFailures } from "./errors.js";
import { logFormatFromEnv, stdoutLinesWritten } from "../log.js";
import { capOldGeneration } from "./old-generation.js";
import { capYoungGeneration } from "./young-generation.js";

const HELP = `hookledger: exactly-once, in-order webhook processing on Postgres

Usage: hookledger <command> [options]

Commands:
  serve              receive webhooks on POST /webhooks/:source and run the worker
  worker             run only the worker (any number of them may share one database)
  migrate            apply the ledger's migrations and exit
  send               sign and post the demo's events, or JSON files as any source, to a running service
  stats              deliveries, duplicate rate, would-skip, refusals; backlog, failures, dead, time to settle
  events             list, show, retry and requeue events in the ledger
  outbox             list, show and retry the messages handlers sent with ctx.outbox.send
  forward            list forwarding destinations, show a forward's attempts, re-enable a destination
  replay             bring back missed events: replay stripe (events API), replay github (redeliveries)
  reconcile          list the Stripe events the ledger lacks and claim them
  prune              delete settled events past a horizon, keeping tombstones of their keys
  backfill-versions  seed the version guard from your own tables
  dashboard          the web dashboard on its own listener (serve also has it, on its admin listener)

Run \`hookledger <command> --help\` for a command's options and examples.

Options:
  -h, --help      show this help
  -v, --version   print the version

Environment: DATABASE_URL, PORT, HOST, HOOKLEDGER_SCHEMA, HOOKLEDGER_MODE, HOOKLEDGER_REPLAY_TOKEN, REDIS_URL, LOG_LEVEL,
  LOG_FORMAT, HOOKLEDGER_EMBEDDED_PORT, HOOKLEDGER_TRUST_PROXY; ADMIN_PORT and ADMIN_HOST (serve: /metrics, /healthz,
  /readyz and /dashboard/, default 127.0.0.1 on the next port); HOOKLEDGER_DASHBOARD_TOKEN (the dashboard's user admin); METRICS_PORT (worker: serve /metrics, /healthz and /readyz on this port);
  HOOKLEDGER_SEMI_SPACE_MB (serve, worker: V8's young generation cap on Node 22.15+, default 8, 0 = node's own);
  HOOKLEDGER_HEAP_GROWING_PERCENT (serve, worker: V8's old generation growth cap, default 30, 0 = V8's own)

Examples:
  hookledger serve                          # the demo on an embedded Postgres
  DATABASE_URL=postgres://… hookledger serve --config ./hookledger.config.mjs --port 8080
  hookledger worker --config ./hookledger.config.mjs
  hookledger send --url http://127.0.0.1:3000
  hookledger stats --since 24h --source stripe
  hookledger replay stripe --source stripe --since 2h
  hookledger events requeue --status dead --source stripe --yes
  hookledger prune --older-than 90d
`;

// Each command is src/cli/commands/<name>.ts exporting `command: Command`; it parses its own arguments. Its module
// loads only when it runs; the imports are written out, not built from the name, so that the bundler sees every
// command (scripts/bundle.mjs).
const COMMANDS: Readonly<Record<string, () => Promise<{ command: Command }>>> = {
  serve: () => import("./commands/serve.js"),
  worker: () => import("./commands/worker.js"),
  migrate: () => import("./commands/migrate.js"),
  send: () => import("./commands/send.js"),
  stats: () => import("./commands/stats.js"),
  events: () => import("./commands/events.js"),
  outbox: () => import("./commands/outbox.js"),
  forward: () => import("./commands/forward.js"),
  replay: () => import("./commands/replay.js"),
  reconcile: () => import("./commands/reconcile.js"),
  prune: () => import("./commands/prune.js"),
  "backfill-versions": () => import("./commands/backfill-versions.js"),
  dashboard: () => import("./commands/dashboard.js"),
};

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  const io: CommandIO = {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    isTTY: process.stdout.isTTY === true,
  };
  if (first === "--version" || first === "-v") {
    const pkg = JSON.parse(readFileSync(packageFile("../package.json"), "utf8")) as {
      version: string;
    };
    io.out(`${pkg.version}\n`);
    return 0;
  }
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    io.out(HELP);
    return first === undefined ? 2 : 0;
  }
  const load = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (load === undefined) {
    const what = first.startsWith("-") ? `unknown option '${first}'` : `unknown command '${first}'`;
    throw new CliError(
      `${what}; commands are ${Object.keys(COMMANDS).join(", ")} (see \`hookledger --help\`)`,
      2,
    );
  }
  try {
    logFormatFromEnv();
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  capYoungGeneration(first);
  capOldGeneration(first);
  const module = await load().catch((error: NodeJS.ErrnoException) => {
    // A file of hookledger's own (a chunk of the bundle) is missing, not a package: Node says "Cannot find module"
    // for a path and "Cannot find package" for a package.
    if (error.code === "ERR_MODULE_NOT_FOUND" && error.message.startsWith("Cannot find module")) {
      throw new CliError(`${first} is missing from this install of hookledger; reinstall the package`);
    }
    throw error;
  });
  return module.command.run(rest, io);
}

explainDatabaseFailures(main(process.argv.slice(2)))
  .then(
    (code) => code,
    (error: unknown) => {
      if (error instanceof CliError) {
        process.stderr.write(`hookledger${error.command ? ` ${error.command}` : ""}: ${error.message}\n`);
        return error.exitCode;
      }
      if (error instanceof MissingPackageError) {
        process.stderr.write(`hookledger: ${error.message}\n`);
        return 1;
      }
      const cause = error instanceof Error ? error : new Error(String(error));
      process.stderr.write(
        `hookledger: ${cause.message}${cause.cause instanceof Error ? ` (${cause.cause.message})` : ""}\n`,
      );
      return 1;
    },
  )
  .then(async (code) => {
    await stdoutLinesWritten();
    process.exit(code);
  });
