// The scale mode's N×M phase (BENCH_SCALE_PHASES=nxm; docs/benchmarks.md, "Many receivers and workers (N×M)"): every
// cell of BENCH_NXM_CELLS (receivers × workers) on the filled ledger with the same events, then 1×1 again to see how
// far the machine drifted; a table, and the lines of the scale table: each cell's Postgres CPU per claim and per event
// against 1×1 (judged at 4×4: ≤ 1.2×), deadlocks, serialization failures and exactly-once.
import { table } from "../report.js";
import type { ScaleLine } from "./scale.js";
import { type NxmCell, runCell } from "./scale-nxm-cell.js";
import { clearRun } from "./scale-ledger.js";
import type { RunContext } from "./types.js";

const LIMIT = 1.2;
const name = (c: NxmCell) => `${c.receivers}×${c.workers}`;
const fmt = (n: number) => (Number.isNaN(n) ? "-" : n >= 100 ? n.toFixed(0) : n.toFixed(2));

/**
 * Runs the N×M cells on `schema` (the filled ledger, left as it was found) at each of BENCH_NXM_RATES and returns
 * their scale-table lines.
 *
 * @example
 * lines.push(...(await nxmPhase(ctx, schema, console.log)));
 */
export async function nxmPhase(
  ctx: RunContext,
  schema: string,
  log: (line: string) => void,
): Promise<ScaleLine[]> {
  const lines: ScaleLine[] = [];
  try {
    for (const rate of ctx.env.nxmRates) lines.push(...(await atRate(ctx, schema, rate, log)));
  } finally {
    await ctx.admin.query(`drop table if exists ${schema}.app_applications`);
    await clearRun(ctx.admin, schema);
  }
  return lines;
}

// Closed loop, the batches are as full as the load makes them; at a fixed rate below what the workers can do, the
// pick wait is the workers' own, not a backlog's.
const rateName = (rate: number) => (rate === 0 ? "closed loop" : `${rate} req/s`);

async function atRate(
  ctx: RunContext,
  schema: string,
  rate: number,
  log: (line: string) => void,
): Promise<ScaleLine[]> {
  const shapes = ctx.env.nxmCells;
  const again = shapes.length > 1 && shapes.some(([r, w]) => r === 1 && w === 1);
  log(
    `N×M: receivers × workers ${shapes.map(([r, w]) => `${r}×${w}`).join(", ")}${again ? ", 1×1 again" : ""}; ${ctx.env.events} events over ${ctx.env.entities} entities round-robin, ${rateName(rate)}`,
  );
  const cells: NxmCell[] = [];
  for (const [receivers, workers] of [...shapes, ...(again ? [[1, 1] as const] : [])]) {
    const tag = `nxm-${rate}-${receivers}x${workers}${cells.some((c) => c.receivers === receivers && c.workers === workers) ? "-again" : ""}`;
    const cell = await runCell(ctx, schema, { receivers, workers, rate, tag });
    cells.push(cell);
    log(
      `  ${tag}: PG CPU ${fmt(cell.claimUs)} µs/claim, ${fmt(cell.eventUs)} µs/event; lock waits in ${cell.lockSamples} of ${cell.samples} samples (at most ${cell.lockMax}); ${cell.deadlocks} deadlocks, ${cell.serialization} serialization failures, ${cell.retried} retried; pick wait p50 ${fmt(cell.pickP50)} ms, p99 ${fmt(cell.pickP99)} ms; ingest ${cell.ingestSeconds.toFixed(1)} s, drained ${cell.drainSeconds.toFixed(1)} s after; idle PG CPU ${fmt(cell.idleReceiversMs)} ms/s (receivers), ${fmt(cell.idleWorkersMs)} ms/s (workers) ${[...cell.problems, ...cell.exactlyOnce].join("; ")}`,
    );
    if (cell.statements !== "") log(cell.statements);
  }
  const base = cells[0]?.receivers === 1 && cells[0].workers === 1 ? cells[0] : undefined;
  const ratio = (n: number, b: number | undefined) => (b === undefined ? Number.NaN : n / b);
  log(
    table(
      [
        "cell",
        "µs/claim",
        "÷ 1×1",
        "µs/event",
        "÷ 1×1",
        "lock waits",
        "deadlocks",
        "40001",
        "exactly-once",
        "pick p99 ms",
      ],
      cells.map((c, i) => [
        i === cells.length - 1 && again ? "1×1 again" : name(c),
        fmt(c.claimUs),
        fmt(ratio(c.claimUs, base?.claimUs)),
        fmt(c.eventUs),
        fmt(ratio(c.eventUs, base?.eventUs)),
        `${c.lockSamples}/${c.samples}`,
        String(c.deadlocks),
        String(c.serialization),
        c.exactlyOnce.length === 0 ? "yes" : "NO",
        fmt(c.pickP99),
      ]),
    ),
  );
  return linesOf(cells.slice(0, shapes.length), base, rateName(rate));
}

function linesOf(cells: readonly NxmCell[], base: NxmCell | undefined, label: string): ScaleLine[] {
  const invalid = cells.some((c) => c.problems.length > 0);
  const judged = (ok: boolean) => (invalid ? "INVALID" : ok ? "PASS" : "FAIL");
  const perCell = cells.flatMap((c) =>
    (["claim", "event"] as const).map((per): ScaleLine => {
      const value = per === "claim" ? c.claimUs : c.eventUs;
      const against = base === undefined ? Number.NaN : per === "claim" ? base.claimUs : base.eventUs;
      const ratio = value / against;
      const target = c.receivers === 4 && c.workers === 4;
      return {
        what: `N×M ${label} ${name(c)}: PG CPU µs/${per} (empty: 1×1)`,
        empty: against,
        full: value,
        ratio,
        target: target ? `≤ ${LIMIT}×` : "-",
        verdict: c.problems.length > 0 ? "INVALID" : target ? judged(ratio <= LIMIT) : "INFO",
      };
    }),
  );
  const sum = (f: (c: NxmCell) => number) => cells.reduce((n, c) => n + f(c), 0);
  const intact = cells.filter((c) => c.exactlyOnce.length === 0).length;
  const line = (what: string, full: number, target: string, ok: boolean | undefined): ScaleLine => ({
    what,
    empty: Number.NaN,
    full,
    ratio: Number.NaN,
    target,
    verdict: ok === undefined ? (invalid ? "INVALID" : "INFO") : judged(ok),
  });
  const worstPick = Math.max(...cells.map((c) => c.pickP99));
  return [
    ...perCell,
    line(
      `N×M ${label} deadlocks (all cells)`,
      sum((c) => c.deadlocks),
      "0",
      sum((c) => c.deadlocks) === 0,
    ),
    line(
      `N×M ${label} serialization failures (all cells)`,
      sum((c) => c.serialization),
      "0",
      sum((c) => c.serialization) === 0,
    ),
    line(`N×M ${label} cells exactly-once (of ${cells.length})`, intact, "all", intact === cells.length),
    line(
      `N×M ${label} lock-wait samples (all cells)`,
      sum((c) => c.lockSamples),
      "-",
      undefined,
    ),
    {
      ...line(`N×M ${label} pick wait p99 ms (empty: 1×1, full: worst cell)`, worstPick, "-", undefined),
      empty: base?.pickP99 ?? Number.NaN,
    },
  ];
}
