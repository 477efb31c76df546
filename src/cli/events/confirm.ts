import { createInterface } from "node:readline/promises";

/**
 * Asks a yes/no question on a terminal and resolves true for `y` or `yes`; anything else, or the input ending,
 * is a no.
 *
 * @example
 * if (!(await confirm("requeue 42 dead events? [y/N] ", process.stdin, process.stderr))) return 1;
 */
export async function confirm(
  question: string,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
): Promise<boolean> {
  const rl = createInterface({ input, output, terminal: false });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.once("close", () => resolve(""));
      rl.question(question).then(resolve, () => resolve(""));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
