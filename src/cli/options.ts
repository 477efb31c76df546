import { type ParseArgsConfig, parseArgs } from "node:util";
import { durationMs, pointInTime } from "../config/duration.js";
import { CliError } from "./errors.js";

type OptionsConfig = NonNullable<ParseArgsConfig["options"]>;
type Parsed<O extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: boolean }>
>;

/**
 * Parses a command's arguments with `node:util` parseArgs, strict. An unknown option, a missing value, a value
 * given to a flag or an unexpected argument is a usage error (exit 2) that names it, lists every option the
 * command takes and points at its `--help`, instead of Node's parser message.
 *
 * @example
 * const { values } = parseOptions("serve", args, { port: { type: "string" }, help: { type: "boolean", short: "h" } });
 */
export function parseOptions<const O extends OptionsConfig>(
  command: string,
  args: string[],
  options: O,
  { positionals = false }: { positionals?: boolean } = {},
): Parsed<O> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: positionals });
  } catch (error) {
    const { code, message } = error as Error & { code?: string };
    const named = /'(-{1,2}[^' ]+)/.exec(message)?.[1];
    const takes = `${command} takes ${optionList(options)}`;
    const help = `see \`hookledger ${command} --help\``;
    switch (code) {
      case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
        throw new CliError(`unknown option '${named}'; ${takes} (${help})`, 2, command);
      case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
        throw new CliError(
          message.includes("does not take an argument")
            ? `${named} is a flag and takes no value; ${help}`
            : `${named} needs a value; ${takes} (${help})`,
          2,
          command,
        );
      case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL": {
        const argument = /'([^']*)'/.exec(message)?.[1];
        throw new CliError(`unexpected argument '${argument}'; ${takes} (${help})`, 2, command);
      }
      default:
        throw new CliError(`${message}; ${help}`, 2, command);
    }
  }
}

function optionList(options: OptionsConfig): string {
  return Object.keys(options)
    .map((name) => `--${name}`)
    .join(", ");
}

/**
 * Reads a duration option (`--older-than 90d`) in milliseconds; anything else is a usage error naming the flag.
 *
 * @example
 * durationOption("--older-than", "90d"); // 7_776_000_000
 */
export function durationOption(flag: string, text: string): number {
  const ms = durationMs(text);
  if (ms === undefined) {
    throw new CliError(
      `${flag} '${text}' is not a duration; give a positive whole number and a unit (s, m, h, d, w), e.g. 90m, 24h or 7d`,
      2,
    );
  }
  return ms;
}

/**
 * Reads a `--since`/`--until` option with {@link pointInTime}: a duration back from `now` or an ISO 8601 date or
 * time; anything else is a usage error naming the flag and both forms.
 *
 * @example
 * timeOption("--since", "24h", Date.now()); // a Date 24 hours ago
 */
export function timeOption(flag: string, text: string, now: number): Date {
  const at = pointInTime(text, now);
  if (at === undefined) {
    throw new CliError(
      `${flag} '${text}' is neither a duration back from now (90m, 24h, 7d) nor a timestamp (ISO 8601: 2024-05-01 or 2024-05-01T12:00:00Z)`,
      2,
    );
  }
  return at;
}
