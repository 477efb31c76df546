// The rounds of `npm run bench` and of the probes that compare contenders the same way: every round runs every
// contender once, in an order rotated by the round, and a contender that throws reports each of its rows invalid.
import { runLine } from "../report.js";
import type { Contender, RunContext, RunResult } from "./types.js";

/**
 * Runs `env.rounds` rounds of `contenders`, printing each row as it ends; every row of every round, in run order.
 *
 * @example
 * const results = await runRounds(contenders, { env, admin, pgPort: pgPort(env.url), logDir, root });
 */
export async function runRounds(
  contenders: readonly Contender[],
  base: Omit<RunContext, "round">,
): Promise<RunResult[]> {
  const { rounds } = base.env;
  const results: RunResult[] = [];
  for (let round = 1; round <= rounds && contenders.length > 0; round++) {
    const shift = (round - 1) % contenders.length;
    const order = [...contenders.slice(shift), ...contenders.slice(0, shift)];
    console.log(`\nround ${round}/${rounds}: ${order.map((c) => c.name).join(" → ")}`);
    const ctx: RunContext = { ...base, round };
    for (const contender of order) {
      let rows: RunResult[];
      try {
        rows = await contender.run(ctx);
      } catch (error) {
        const message = (error as Error).message;
        rows = contender.rows.map(([name, unit]) => ({
          name,
          round,
          unit,
          valid: false,
          problems: [`the run failed: ${message}`],
          ops: 0,
          seconds: 0,
          perSecond: Number.NaN,
          notes: [],
        }));
      }
      for (const r of rows) console.log(runLine(r));
      results.push(...rows);
    }
  }
  return results;
}
