import {
  EVENT_OUTCOMES,
  EVENT_STATUSES,
  type EventFilter,
  getEvent,
  listEvents,
} from "../../ledger/inspect.js";
import { countRequeue, type RequeueFilter, requeueEvents } from "../../ledger/requeue.js";
import { type RetryResult, retryEvents } from "../../ledger/retry.js";
import { getTombstone } from "../../ledger/tombstone.js";
import { CliError } from "../errors.js";
import { parseOptions, timeOption } from "../options.js";
import { eventId, oneOf, parseCount, parseIds } from "../events/args.js";
import { confirm } from "../events/confirm.js";
import { withLedger } from "../events/with-ledger.js";
import { EVENTS_COMMON, EVENTS_HELP, EVENTS_USAGE } from "../events/help.js";
import {
  eventJson,
  formatEventDetail,
  formatEventTable,
  formatTombstone,
  tombstoneJson,
} from "../events/render.js";
import type { Command, CommandIO } from "./types.js";

const common = { config: { type: "string" }, help: { type: "boolean", short: "h" } } as const;
const filterFlags = {
  source: { type: "string" },
  type: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
} as const;

type Sub = (args: string[], io: CommandIO) => Promise<number>;

/**
 * `hookledger events list|show|retry|requeue`: inspect the ledger's events and send failed or dead ones back to
 * the workers.
 *
 * @example
 * // hookledger events list --status dead --source stripe
 * await command.run(["list", "--status", "dead", "--source", "stripe"], io);
 */
export const command: Command = {
  summary: "list, show, retry and requeue the ledger's events",
  async run(args, io) {
    const [sub, ...rest] = args;
    if (sub === undefined || sub === "--help" || sub === "-h" || sub === "help") {
      io.out(EVENTS_USAGE);
      return sub === undefined ? 2 : 0;
    }
    const subs: Record<string, Sub> = { list, show, retry, requeue };
    const run = subs[sub];
    if (!run && sub.startsWith("-")) {
      throw new CliError(
        `unknown option '${sub}'; events takes a subcommand first: list, show, retry or requeue (see \`hookledger events --help\`)`,
        2,
        "events",
      );
    }
    if (!run) throw new CliError(`unknown subcommand 'events ${sub}'; use list, show, retry or requeue`, 2);
    return run(rest, io);
  },
};

async function list(args: string[], io: CommandIO): Promise<number> {
  const { values } = parseOptions("events list", args, {
    ...common,
    ...filterFlags,
    status: { type: "string" },
    outcome: { type: "string" },
    limit: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) return help(io, "list");
  const filter: EventFilter = {
    ...timeFilter(values),
    ...(values.status !== undefined && { status: oneOf("--status", values.status, EVENT_STATUSES) }),
    ...(values.outcome !== undefined && { outcome: oneOf("--outcome", values.outcome, EVENT_OUTCOMES) }),
  };
  const limit = values.limit === undefined ? 50 : parseCount("--limit", values.limit, 100_000);
  const events = await withLedger(values.config, (db) => listEvents(db.pool, db.ledger, filter, limit));
  if (values.json) io.out(`${JSON.stringify(events.map(eventJson), null, 2)}\n`);
  else if (events.length === 0) io.out("no events match\n");
  else {
    io.out(formatEventTable(events));
    if (events.length === limit) io.err(`(the newest ${limit}; --limit N for more, or narrow the filter)\n`);
  }
  return 0;
}

async function show(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseOptions(
    "events show",
    args,
    { ...common, source: { type: "string" }, json: { type: "boolean" } },
    { positionals: true },
  );
  if (values.help) return help(io, "show");
  if (positionals.length !== 1) {
    throw new CliError("give one event id: hookledger events show source/dedupe_key (or --source S KEY)", 2);
  }
  const [key] = parseIds(positionals, values.source);
  if (!key) return 2;
  const json = values.json === true;
  const text = await withLedger(values.config, async (db) => {
    const found = await getEvent(db.pool, db.ledger, key.source, key.dedupeKey);
    if (found) return json ? `${JSON.stringify(eventJson(found), null, 2)}\n` : formatEventDetail(found);
    const pruned = await getTombstone(db.pool, db.ledger, key.source, key.dedupeKey);
    if (pruned) return json ? `${JSON.stringify(tombstoneJson(pruned), null, 2)}\n` : formatTombstone(pruned);
    throw new CliError(
      `no event ${eventId(key)} in schema '${db.ledger.schema}'; check the source name (as configured, case-sensitive) and find the id with \`hookledger events list --source ${key.source}\``,
    );
  });
  io.out(text);
  return 0;
}

async function retry(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseOptions(
    "events retry",
    args,
    {
      ...common,
      source: { type: "string" },
      force: { type: "boolean" },
      json: { type: "boolean" },
    },
    { positionals: true },
  );
  if (values.help) return help(io, "retry");
  if (positionals.length === 0) {
    throw new CliError("give the events to retry: hookledger events retry source/dedupe_key…", 2);
  }
  const keys = parseIds(positionals, values.source);
  const results = await withLedger(values.config, (db) =>
    retryEvents(db.pool, db.ledger, keys, { force: values.force === true }),
  );
  if (values.json)
    io.out(
      `${JSON.stringify(
        results.map((r) => ({ id: eventId(r), ...r })),
        null,
        2,
      )}\n`,
    );
  else for (const r of results) io.out(`${eventId(r)}: ${retryLine(r)}\n`);
  return results.every((r) => r.result === "retried") ? 0 : 1;
}

function retryLine(r: RetryResult): string {
  switch (r.result) {
    case "retried":
      return `${r.previous} → pending, due now (${r.attempts} attempts so far)`;
    case "missing":
      return `no such event; check the source name and find the id with \`hookledger events list --source ${r.source}\``;
    case "settled":
      return `not retried: settled (${r.outcome ?? "?"}). Running it again repeats its handler's side effects unless the handler is idempotent (the version guard only keeps entities from going backwards); pass --force to run it anyway`;
    case "pending":
      return "not retried: already pending";
    case "inline":
      return "not retried: an app's inline route is running it; its lease decides what happens next";
    case "busy":
      return "not retried: a worker is running it right now; look again with `hookledger events show` once it ends";
  }
}

async function requeue(args: string[], io: CommandIO): Promise<number> {
  const { values } = parseOptions("events requeue", args, {
    ...common,
    ...filterFlags,
    status: { type: "string" },
    outcome: { type: "string" },
    yes: { type: "boolean" },
  });
  if (values.help) return help(io, "requeue");
  if ((values.status === undefined) === (values.outcome === undefined)) {
    throw new CliError(
      "requeue needs one of --status dead, --status failed or --outcome unhandled (other settled events: `events retry --force`)",
      2,
    );
  }
  const filter: RequeueFilter =
    values.outcome !== undefined
      ? {
          ...timeFilter(values),
          status: "settled",
          outcome: oneOf("--outcome", values.outcome, ["unhandled"] as const),
        }
      : {
          ...timeFilter(values),
          status: oneOf("--status", values.status ?? "", ["dead", "failed"] as const),
        };
  const kind = filter.outcome ?? filter.status;
  return withLedger(values.config, async (db) => {
    const count = await countRequeue(db.pool, db.ledger, filter);
    const what = `${count} ${kind} event${count === 1 ? "" : "s"}`;
    if (count === 0) {
      io.out(`no ${kind} events match; nothing to requeue\n`);
      return 0;
    }
    if (!values.yes) {
      if (process.stdin.isTTY !== true) {
        throw new CliError(
          `this would requeue ${what}; stdin is not a terminal to confirm on, so pass --yes to requeue them`,
          2,
        );
      }
      if (!(await confirm(`requeue ${what}? [y/N] `, process.stdin, process.stderr))) {
        io.err("nothing requeued\n");
        return 1;
      }
    }
    let done = 0;
    const report = await requeueEvents(db.pool, db.ledger, filter, {
      onBatch: (n) => {
        done += n;
        if (io.isTTY) io.err(`\rrequeued ${done} of ${count}`);
      },
    });
    if (io.isTTY) io.err("\n");
    const skipped = report.matched - report.requeued;
    io.out(
      `requeued ${report.requeued} of ${report.matched} ${kind} events in ${report.batches} batch${report.batches === 1 ? "" : "es"}${skipped > 0 ? ` (${skipped} had moved on or were running, left alone)` : ""}\n`,
    );
    return 0;
  });
}

function timeFilter(values: { source?: string; type?: string; since?: string; until?: string }) {
  const now = Date.now();
  return {
    ...(values.source !== undefined && { source: values.source }),
    ...(values.type !== undefined && { type: values.type }),
    ...(values.since !== undefined && { since: timeOption("--since", values.since, now) }),
    ...(values.until !== undefined && { until: timeOption("--until", values.until, now) }),
  };
}

function help(io: CommandIO, sub: keyof typeof EVENTS_HELP): number {
  io.out(`Usage: ${EVENTS_HELP[sub]}\n${EVENTS_COMMON}`);
  return 0;
}
