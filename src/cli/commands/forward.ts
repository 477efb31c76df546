import {
  type DestinationState,
  enableForwardDestination,
  type ForwardAttempt,
  listForwardAttempts,
  listForwardDestinations,
} from "../../ledger/forward-destinations.js";
import { FORWARD_KEY } from "../../ledger/forward-write.js";
import { getOutboxMessage, type OutboxDetail } from "../../ledger/outbox-inspect.js";
import { outboxIdempotencyKey } from "../../ledger/outbox-write.js";
import { CliError } from "../errors.js";
import { withLedger } from "../events/with-ledger.js";
import { parseOptions } from "../options.js";
import type { Command, CommandIO } from "./types.js";

const common = {
  config: { type: "string" },
  help: { type: "boolean", short: "h" },
  json: { type: "boolean" },
} as const;

const HELP = {
  list: "hookledger forward list [--source S] [--json]",
  show: "hookledger forward show SOURCE EVENT_ID [--json]",
  enable: "hookledger forward enable SOURCE [--json]",
} as const;
const USAGE = `Usage: hookledger forward <list|show|enable> [options]

The destinations of the sources that forward their events (docs/forwarding.md), one event's forward and its
attempts, and a destination re-enabled after a 410 or a pause of the breaker. Retry a dead forward with
\`hookledger outbox retry\`.

  ${HELP.list}
  ${HELP.show}
  ${HELP.enable}

Options:
  --config FILE   the config file (default ./hookledger.config.mjs when present); DATABASE_URL, HOOKLEDGER_SCHEMA
  --json          print JSON
  -h, --help      show this help

Examples:
  hookledger forward list
  hookledger forward show stripe evt_1NqK…
  hookledger forward enable stripe
`;

type Sub = (args: string[], io: CommandIO) => Promise<number>;

/**
 * `hookledger forward list|show|enable`: the forwarding destinations, one event's forward with its attempts, and
 * a disabled or paused destination re-enabled.
 *
 * @example
 * // hookledger forward enable stripe
 * await command.run(["enable", "stripe"], io);
 */
export const command: Command = {
  summary: "list forwarding destinations, show a forward's attempts, re-enable a destination",
  async run(args, io) {
    const [sub, ...rest] = args;
    if (sub === undefined || sub === "--help" || sub === "-h" || sub === "help") {
      io.out(USAGE);
      return sub === undefined ? 2 : 0;
    }
    const subs: Record<string, Sub> = { list, show, enable };
    const run = Object.hasOwn(subs, sub) ? subs[sub] : undefined;
    if (!run) {
      throw new CliError(
        `unknown subcommand 'forward ${sub}'; use list, show or enable (see \`hookledger forward --help\`)`,
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

/** Whitespace folded to one space and cut at `max` characters, for one line of output. */
const oneLine = (text: string, max: number) => {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
};

function stateOf(d: DestinationState): string {
  if (d.disabledAt !== null) {
    return `disabled since ${d.disabledAt.toISOString()} (${d.disabledReason ?? "no reason recorded"})`;
  }
  if (d.pausedUntil !== null) {
    return `paused until ${d.pausedUntil.toISOString()} after ${d.failures} failure${d.failures === 1 ? "" : "s"}`;
  }
  return "enabled";
}

async function list(args: string[], io: CommandIO): Promise<number> {
  const { values } = parseOptions("forward list", args, { ...common, source: { type: "string" } });
  if (values.help) return help(io, "list");
  // Filtered here: asked for a name, listForwardDestinations answers for it even when it never forwarded, and a
  // typo would read as an idle destination.
  const all = await withLedger(values.config, (db) => listForwardDestinations(db.pool, db.ledger));
  const destinations = values.source === undefined ? all : all.filter((d) => d.source === values.source);
  if (values.json) {
    io.out(`${JSON.stringify(destinations, null, 2)}\n`);
    return 0;
  }
  if (destinations.length === 0) {
    io.out(
      values.source === undefined
        ? "no source has forwarded yet\n"
        : `${values.source} has not forwarded yet\n`,
    );
    return 0;
  }
  const rows = destinations.map((d): [string, string, string] => [
    d.source,
    stateOf(d),
    `pending ${d.pending}  dead ${d.dead}  sent ${d.sent}`,
  ]);
  const width = (i: 0 | 1) => Math.max(...rows.map((r) => r[i].length));
  for (const [source, state, counts] of rows) {
    io.out(`${source.padEnd(width(0))}  ${state.padEnd(width(1))}  ${counts}\n`);
  }
  return 0;
}

function nextOf(m: OutboxDetail): string {
  switch (m.status) {
    case "sent":
      return m.sentAt?.toISOString() ?? "";
    case "dead":
      return `never (dead: \`hookledger outbox retry ${m.idempotencyKey}\`)`;
    case "stale":
      return "never (stale: a newer version of its entity was delivered first)";
    default:
      return m.nextAttemptAt.toISOString();
  }
}

function attemptLine(a: ForwardAttempt): string {
  const parts = [
    `#${a.attempt}`,
    a.at.toISOString(),
    a.status === null ? "no answer" : `HTTP ${a.status}`,
    `${a.ms} ms`,
    ...(a.error === null ? [] : [oneLine(a.error, 120)]),
    ...(a.snippet === null || a.snippet.trim() === "" ? [] : [`answer: ${oneLine(a.snippet, 120)}`]),
  ];
  return `  ${parts.join("  ")}\n`;
}

async function show(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseOptions("forward show", args, common, { positionals: true });
  if (values.help) return help(io, "show");
  const [source, eventId] = positionals;
  if (source === undefined || eventId === undefined || positionals.length !== 2) {
    throw new CliError(
      "give a source and an event id: hookledger forward show stripe evt_1 (`hookledger outbox list --sender forward` lists them)",
      2,
    );
  }
  const limit = 100;
  // By its idempotency key, which the forward's (source, event, '#forward') determine: exact however old it is.
  const found = await withLedger(values.config, async (db) => {
    const key = outboxIdempotencyKey(source, eventId, FORWARD_KEY);
    const message = await getOutboxMessage(db.pool, db.ledger, key);
    return (
      message && { message, attempts: await listForwardAttempts(db.pool, db.ledger, source, eventId, limit) }
    );
  });
  if (!found) {
    throw new CliError(
      `no forward of ${source}/${eventId}; \`hookledger outbox list --sender forward --source ${source}\` lists that source's forwards`,
    );
  }
  const { message: m, attempts } = found;
  if (values.json) {
    io.out(`${JSON.stringify({ ...m, attempts }, null, 2)}\n`);
    return 0;
  }
  const lines: [string, string][] = [
    ["event", `${m.source}/${m.eventId}`],
    ["webhook id", m.idempotencyKey],
    ["status", m.status],
    // A 410's attempt is given back (the destination, not the message, failed): fewer spent than recorded.
    ["attempts spent", String(m.attempts)],
    ["created", m.createdAt.toISOString()],
    [m.status === "sent" ? "sent" : "next attempt", nextOf(m)],
    ["last error", m.lastError ?? "none"],
    ["last status", m.lastStatus === null ? "none" : String(m.lastStatus)],
  ];
  for (const [name, value] of lines) io.out(`${`${name}:`.padEnd(16)}${value}\n`);
  io.out(attempts.length === 0 ? "no attempt recorded yet\n" : "attempts recorded:\n");
  for (const a of attempts) io.out(attemptLine(a));
  if (attempts.length === limit) io.err(`(the first ${limit} attempts)\n`);
  return 0;
}

async function enable(args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseOptions("forward enable", args, common, { positionals: true });
  if (values.help) return help(io, "enable");
  const [source] = positionals;
  if (source === undefined || positionals.length !== 1) {
    throw new CliError("give one source: hookledger forward enable stripe (`hookledger forward list`)", 2);
  }
  const { enabled, pending, known } = await withLedger(values.config, async (db) => {
    const enabled = await enableForwardDestination(db.pool, db.ledger, source);
    const known = (await listForwardDestinations(db.pool, db.ledger)).map((d) => d.source);
    const [state] = await listForwardDestinations(db.pool, db.ledger, [source]);
    return { enabled, pending: state?.pending ?? 0, known };
  });
  // A typo would otherwise read as "was not disabled", as if the destination were fine.
  if (!known.includes(source)) {
    throw new CliError(
      `${source} has not forwarded: no destination of that name (${known.length === 0 ? "no source has forwarded yet" : `forwarding sources: ${known.join(", ")}`}; see \`hookledger forward list\`)`,
    );
  }
  if (values.json) io.out(`${JSON.stringify({ source, enabled, pending }, null, 2)}\n`);
  else if (!enabled) io.out(`forwarding of ${source} was not disabled\n`);
  else {
    const due = pending === 1 ? "1 waiting delivery is" : `${pending} waiting deliveries are`;
    io.out(`re-enabled forwarding of ${source}; ${due} due now\n`);
  }
  return 0;
}
