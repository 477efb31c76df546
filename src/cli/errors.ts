/** A CLI failure the user can fix: printed as `hookledger[ command]: <message>` without a stack trace. */
export class CliError extends Error {
  constructor(
    message: string,
    /** 2 for a usage mistake, 1 for anything else. */
    readonly exitCode = 1,
    /** The command the message is about (`serve`, `events list`), printed after `hookledger`. */
    readonly command?: string,
  ) {
    super(message);
    this.name = "CliError";
  }
}
