/** How much of a failure the ledger's `last_error` and the log keep. */
const FRAMES = 5;
const CAUSES = 3;
const MAX_LENGTH = 2000;

/**
 * The text recorded for a failed attempt, in `last_error` and in the log's `stack`: a first line with the message
 * and its causes ("Failed query: begin: could not serialize access …", since wrappers hide the reason), then the
 * top frames of the error and of each cause, so the handler's own file and line are at hand without a log search.
 * Bounded: 5 frames per error, 3 causes, 2,000 characters.
 *
 * `frames: false` keeps only the first line (a timeout's stack shows hookledger's timer, not the handler).
 */
export function failureText(error: Error, options: { frames?: boolean } = {}): string {
  const chain = [error];
  for (let cause = error.cause; cause instanceof Error && chain.length <= CAUSES; cause = cause.cause)
    chain.push(cause);
  const lines = [chain.map((e) => e.message).join(": ")];
  if (options.frames !== false)
    chain.forEach((e, i) => {
      const frames = topFrames(e);
      if (frames.length === 0) return;
      if (i > 0) lines.push(`caused by ${e.name}: ${e.message}`);
      lines.push(...frames);
    });
  const text = lines.join("\n");
  return text.length <= MAX_LENGTH ? text : `${text.slice(0, MAX_LENGTH - 1)}…`;
}

function topFrames(error: Error): string[] {
  return (error.stack ?? "")
    .split("\n")
    .filter((line) => /^\s+at /.test(line))
    .slice(0, FRAMES)
    .map((line) => `    ${line.trim()}`);
}
