/** Where a command writes: standard output and standard error, and whether stdout is a terminal (progress bars). */
export interface CommandIO {
  out(text: string): void;
  err(text: string): void;
  readonly isTTY: boolean;
}

/**
 * A command in its own module (`src/cli/commands/<name>.ts`, exporting `command`; `src/cli/main.ts` lists the
 * names it dispatches to): it parses its own arguments with `parseOptions` (src/cli/options.ts: strict, and an
 * unknown option or a missing value names it and lists the command's options), prints `--help` (and `-h`) with
 * its options and examples, and returns the exit code. Usage mistakes throw a `CliError` with exit code 2, naming
 * the problem and the fix.
 *
 * @example
 * export const command: Command = { summary: "…", run: async (args, io) => { io.out("done\n"); return 0; } };
 */
export interface Command {
  /** One line for `hookledger --help`. */
  readonly summary: string;
  run(args: string[], io: CommandIO): Promise<number>;
}
