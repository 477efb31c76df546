/** Where a progress bar draws: the command's output and whether it is a terminal. */
export interface ProgressIO {
  out(text: string): void;
  readonly isTTY: boolean;
}

/** A progress line for one phase; a no-op when the output is not a terminal. */
export interface Progress {
  /** `done` items so far, of `total` when the total is known (else a running count is shown). */
  update(done: number, total?: number): void;
  /** Draws the final state and ends the line. */
  finish(): void;
}

const WIDTH = 30;
const REDRAW_MS = 100;

/**
 * A progress bar for one phase of a long command, drawn on a terminal only (never in logs, pipes or `--json`).
 *
 * @example
 * const bar = progressBar(io, "apply");
 * for (const [i, event] of events.entries()) { await apply(event); bar.update(i + 1, events.length); }
 * bar.finish();
 */
export function progressBar(io: ProgressIO, label: string): Progress {
  if (!io.isTTY) return { update() {}, finish() {} };
  let last = { done: 0, total: undefined as number | undefined };
  let drawnAt = 0;
  let drawn = false;
  const draw = () => {
    const { done, total } = last;
    const count = done.toLocaleString("en-US");
    if (total === undefined || total === 0) {
      io.out(`\r${label}: ${count}`);
    } else {
      const filled = Math.min(WIDTH, Math.round((done / total) * WIDTH));
      const bar = `${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}`;
      io.out(`\r${label} [${bar}] ${count}/${total.toLocaleString("en-US")}`);
    }
    drawn = true;
  };
  return {
    update(done, total) {
      last = { done, total };
      const now = Date.now();
      // Redrawing on every item would cost more than the work on fast pages.
      if (now - drawnAt >= REDRAW_MS) {
        drawnAt = now;
        draw();
      }
    },
    finish() {
      if (!drawn && last.done === 0) return;
      draw();
      io.out("\n");
    },
  };
}
