/**
 * What a replay or a reconciliation found and did. Provider-neutral: Stripe's events API and GitHub's deliveries
 * fill the same counts.
 *
 * @example
 * const report = newReport({ provider: "stripe", source: "stripe", dryRun: false });
 * report.fetched = 4812;
 */
export interface ReplayReport {
  readonly provider: string;
  readonly source: string;
  /** Nothing was written: the counts say what a real run would do. */
  readonly dryRun: boolean;
  /** The time window asked of the provider, after clamping to its retention. */
  window?: { readonly since: Date; readonly until: Date; readonly clamped: boolean };
  /** Events (or deliveries) the provider listed. */
  fetched: number;
  /** Already in the ledger: nothing to do. */
  duplicate: number;
  /** Missing from the ledger and now added (or, in a dry run, that would be). */
  new: number;
  /** Could not be added; see `failures`. */
  failed: number;
  /** The ids counted in `new`, oldest first. */
  readonly newIds: string[];
  readonly failures: { readonly id: string; readonly error: string }[];
  /** One line per phase, e.g. `fetch: 4,812 events in 49 pages`. */
  readonly phases: string[];
  /** Things the operator should know, e.g. that the window was clamped to the provider's retention. */
  readonly notes: string[];
}

/**
 * Starts an empty report.
 *
 * @example
 * const report = newReport({ provider: "github", source: "github-acme", dryRun: true });
 */
export function newReport(fields: Pick<ReplayReport, "provider" | "source" | "dryRun">): ReplayReport {
  return {
    ...fields,
    fetched: 0,
    duplicate: 0,
    new: 0,
    failed: 0,
    newIds: [],
    failures: [],
    phases: [],
    notes: [],
  };
}

// Built on first use: creating an Intl formatter loads ICU data, about 10 ms of `import "hookledger"` otherwise.
let numbers: Intl.NumberFormat | undefined;

/**
 * A count with thousands separators, as the summary prints it.
 *
 * @example
 * formatCount(4812); // "4,812"
 */
export function formatCount(n: number): string {
  numbers ??= new Intl.NumberFormat("en-US");
  return numbers.format(n);
}

/**
 * The report for a person: notes, one line per phase, then the summary, e.g.
 * `4,812 fetched, 4,790 already in the ledger, 22 new, 0 failed`.
 *
 * @example
 * io.out(formatReport(report));
 */
export function formatReport(report: ReplayReport, options: { listNew?: boolean } = {}): string {
  const lines = [...report.notes.map((n) => `note: ${n}`), ...report.phases];
  if (options.listNew && report.newIds.length > 0) {
    lines.push(`${report.dryRun ? "missing" : "added"}: ${report.newIds.join(" ")}`);
  }
  for (const f of report.failures) lines.push(`failed: ${f.id}: ${f.error}`);
  const summary =
    `${formatCount(report.fetched)} fetched, ${formatCount(report.duplicate)} already in the ledger, ` +
    `${formatCount(report.new)} ${report.dryRun ? "missing (dry run: nothing written)" : "new"}, ` +
    `${formatCount(report.failed)} failed`;
  lines.push(summary);
  return `${lines.join("\n")}\n`;
}

/**
 * The report as JSON for scripts: the counts, the window (ISO times), the new ids, failures, phases and notes.
 *
 * @example
 * io.out(formatReportJson(report)); // {"provider":"stripe","fetched":4812,...}
 */
export function formatReportJson(report: ReplayReport): string {
  const { window, ...rest } = report;
  const json = {
    ...rest,
    ...(window && {
      window: {
        since: window.since.toISOString(),
        until: window.until.toISOString(),
        clamped: window.clamped,
      },
    }),
  };
  return `${JSON.stringify(json, null, 2)}\n`;
}
