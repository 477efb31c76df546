import {
  getOutboxMessage,
  listOutbox,
  OUTBOX_STATUSES,
  type OutboxDetail,
  type OutboxFilter,
  type OutboxSummary,
  retryOutbox,
} from "../../ledger/outbox-inspect.js";
import { CliError } from "../errors.js";
import { oneOf, parseCount } from "../events/args.js";
import { withLedger } from "../events/with-ledger.js";
import { parseOptions } from "../options.js";
import type { Command, CommandIO } from "./types.js";

const common = { config: { type: "string" }, help: { type: "boolean", short: "h" } } as const;
const filterFlags = { source: { type: "string" }, sender: { type: "string" } } as const;

const HELP = {
  list: "hookledger outbox list [--status pending|sent|dead] [--source S] [--sender NAME] [--limit N] [--json]",
  show: "hookledger outbox show IDEMPOTENCY_KEY [--json]",
  retry: "hookledger outbox retry (IDEMPOTENCY_KEY… | --dead [--source S] [--sender NAME]) [--json]",
} as const;
const USAGE = `Usage: hookledger outbox <list|show|retry> [options]

The messages handlers wrote with ctx.outbox.send, and their sending (docs/outbox.md).

  ${HELP.list}
  ${HELP.show}
  ${HELP.retry}

Options:
  --config FILE   the config file (default ./hookledger.config.mjs when present); DATABASE_URL, HOOKLEDGER_SCHEMA
  -h, --help      show this help

Examples:
  hookledger outbox list --status dead
  hookledger outbox show hl_3q2+7Xk…
  hookledger outbox retry --dead --sender refund
`;

type Sub = (args: string[], io: CommandIO) => Promise<number>;

/**
 * `hookledger outbox list|show|retry`: the outbox's messages, one in detail, and dead ones sent again.
 *
 * @example
 * // hookledger outbox list --status dead
 * await command.run(["list", "--status", "dead"], io);
 */
export const command: Command = {
  summary: "list, show and retry the outbox's messages",
  async run(args, io) {
    const [sub, ...rest] = args;
    if (sub === undefined || sub === "--help" || sub === "-h" || sub === "help") {
      io.out(USAGE);
      return sub === undefined ? 2 : 0;
    }
    const subs: Record<string, Sub> = { list, show, retry };
    const run = Object.hasOwn(subs, sub) ? subs[sub] : undefined;
    if (!run) {
      throw new CliError(
        `unknown subcommand 'outbox ${sub}'; use list, show or retry (see \`hookledger outbox --help\`)`,
        2,
      );
    }
    return run(rest, io);
  },
};

function help(io: CommandIO, sub: keyof typeof HELP): number {
  io.out(`Usage: ${HELP[sub]}\n`);
  return 0;
}

function filterOf(values: { source?: string | undefined; sender?: string | undefined }): OutboxFilter {
  return {
    ...(values.source !== undefined && { source: values.source }),
    ...(values.sender !== undefined && { sender: values.sender }),
  };
}

const json = (m: OutboxSummary | OutboxDetail) => ({
  ...m,
  nextAttemptAt: m.nextAttemptAt.toISOString(),
  createdAt: m.createdAt.toISOString(),
  sentAt: m.sentAt?.toISOString() ?? null,
});

async function list(args: string[], io: CommandIO): Promise<number> {
  const { values } = parseOptions("outbox list", args, {
    ...common,
    ...filterFlags,
    status: { type: "string" },
    limit: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) return help(io, "list");
  const filter: OutboxFilter = {
    ...filterOf(values),
    ...(values.status !== undefined && { status: oneOf("--status", values.status, OUTBOX_STATUSES) }),
  };
  const limit = values.limit === undefined ? 50 : parseCount("--limit", values.limit, 100_000);
  const messages = await withLedger(values.config, (db) => listOutbox(db.pool, db.ledger, filter, limit));
  if (values.json) io.out(`${JSON.stringify(messages.map(json), null, 2)}\n`);
  else if (messages.length === 0) io.out("no outbox messages match\n");
  else {
    for (const m of messages) {
      const error = m.lastError === null ? "" : `  ${m.lastError.replace(/\s+/g, " ").slice(0, 80)}`;
      io.out(
        `${m.idempotencyKey}  ${m.status.padEnd(7)}  ${m.sender}  ${m.source}/${m.eventId} ${m.key}  attempts ${m.attempts}${error}\n`,
      );
    }
    if (messages.length === limit)
      io.err(`(the newest ${limit}; --limit N for more, or narrow the filter)\n`);
  }
  return 0;
}

async function show(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseOptions(
    "outbox show",
    args,
    { ...common, json: { type: "boolean" } },
    { positionals: true },
  );
  if (values.help) return help(io, "show");
  const [key] = positionals;
  if (key === undefined || positionals.length !== 1) {
    throw new CliError(
      "give one idempotency key: hookledger outbox show hl_… (`hookledger outbox list` lists them)",
      2,
    );
  }
  const found = await withLedger(values.config, (db) => getOutboxMessage(db.pool, db.ledger, key));
  if (!found) {
    throw new CliError(`no outbox message ${key}; find its key with \`hookledger outbox list\``);
  }
  if (values.json) {
    io.out(`${JSON.stringify(json(found), null, 2)}\n`);
    return 0;
  }
  const lines: [string, string][] = [
    ["idempotency key", found.idempotencyKey],
    ["sender", found.sender],
    ["event", `${found.source}/${found.eventId} (message ${found.key})`],
    ["status", found.status],
    ["attempts", String(found.attempts)],
    ["created", found.createdAt.toISOString()],
    [
      found.status === "sent" ? "sent" : "next attempt",
      found.status === "sent"
        ? (found.sentAt?.toISOString() ?? "")
        : found.status === "dead"
          ? "never (dead: retry it)"
          : found.nextAttemptAt.toISOString(),
    ],
    ["last error", found.lastError ?? "none"],
    ["last status", found.lastStatus === null ? "none" : String(found.lastStatus)],
    ["payload", JSON.stringify(found.payload, null, 2)],
  ];
  for (const [name, value] of lines) io.out(`${`${name}:`.padEnd(17)}${value}\n`);
  return 0;
}

async function retry(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseOptions(
    "outbox retry",
    args,
    { ...common, ...filterFlags, dead: { type: "boolean" }, json: { type: "boolean" } },
    { positionals: true },
  );
  if (values.help) return help(io, "retry");
  const byFilter = values.dead === true;
  if (byFilter === positionals.length > 0) {
    throw new CliError(
      "give idempotency keys, or --dead (with --source and --sender to narrow): not both, not neither",
      2,
    );
  }
  if (!byFilter && (values.source !== undefined || values.sender !== undefined)) {
    throw new CliError("--source and --sender narrow --dead; with keys, give only the keys", 2);
  }
  const retried = await withLedger(values.config, (db) =>
    retryOutbox(db.pool, db.ledger, byFilter ? { filter: filterOf(values) } : { keys: positionals }),
  );
  if (values.json) {
    io.out(`${JSON.stringify({ retried }, null, 2)}\n`);
  } else if (byFilter) {
    io.out(
      retried.length === 0
        ? "no dead messages match; nothing to retry\n"
        : `retried ${retried.length} dead message${retried.length === 1 ? "" : "s"}: due now\n`,
    );
  } else {
    for (const key of positionals) {
      io.out(
        `${key}: ${retried.includes(key) ? "dead → pending, due now" : "not retried: not dead (pending, sent, or no such key; see `hookledger outbox show`)"}\n`,
      );
    }
  }
  return byFilter || positionals.every((key) => retried.includes(key)) ? 0 : 1;
}
