import type { Source } from "../edge/receiver.js";
import { SCHEDULED_PRUNE } from "../prune/schedule.js";
import { defaultTombstoneHorizonMs, horizonRefusals } from "../prune/windows.js";
import { durationMs } from "./duration.js";
import { type Configurable, ENV_REF_FIELDS, isEnvRef } from "./env.js";
import type { FieldsOf } from "./fields.js";

/**
 * Work the service runs on an interval (docs/architecture.md §8).
 *
 * @example
 * schedules: {
 *   prune: { olderThan: "90d", every: "1h" },
 *   reconcile: [{ source: "stripe", every: "15m", since: "2h", apiKey: env("STRIPE_API_KEY") }],
 * }
 */
export interface SchedulesConfig {
  /** Deletes settled rows older than `olderThan`, keeping tombstones of their keys (see `hookledger prune`). */
  readonly prune?: {
    readonly olderThan: string;
    /** @defaultValue the longer of 365d and twice `olderThan` */
    readonly tombstonesOlderThan?: string;
    readonly every: string;
    /** Rows per statement. @defaultValue 200 (the CLI's is 1000) */
    readonly batchSize?: number;
    /**
     * The share of time the prune's statements may take, above 0 to 1 (see `hookledger prune --duty`). A scheduled
     * prune has time: by default it waits 19 times as long as each batch took, so that claims never queue behind
     * it for long (docs/benchmarks.md, "Scale": ingest p99 rose 1.34× flat out and stayed within its noise so paced).
     * @defaultValue 0.05 (the CLI's is 1, flat out)
     * @example prune: { olderThan: "90d", every: "1h", duty: 1 } // as fast as it goes
     */
    readonly duty?: number;
    /** Prune sources whose provider's replay window is longer than `olderThan`. */
    readonly force?: boolean;
  };
  /** Lists Stripe events the ledger lacks and claims them (see `hookledger reconcile stripe`). */
  readonly reconcile?: readonly {
    readonly source: string;
    readonly every: string;
    /** @defaultValue twice `every`, at least one hour */
    readonly since?: string;
    /** A Stripe key that can read Events. */
    readonly apiKey: Configurable<string>;
  }[];
}

/** The fields of {@link SchedulesConfig} at every depth (see `unknownFields`). */
export const SCHEDULES_FIELDS = {
  prune: {
    olderThan: true,
    tombstonesOlderThan: true,
    every: true,
    batchSize: true,
    duty: true,
    force: true,
  } satisfies FieldsOf<NonNullable<SchedulesConfig["prune"]>>,
  reconcile: [
    { source: true, every: true, since: true, apiKey: ENV_REF_FIELDS } satisfies FieldsOf<
      NonNullable<SchedulesConfig["reconcile"]>[number]
    >,
  ],
} satisfies FieldsOf<SchedulesConfig>;

/** Schedules with their durations in milliseconds and their keys resolved. */
export interface ResolvedSchedules {
  readonly prune?: {
    readonly olderThanMs: number;
    readonly tombstonesOlderThanMs: number;
    readonly everyMs: number;
    readonly batchSize: number;
    readonly duty: number;
    readonly force: boolean;
  };
  readonly reconcile: readonly { source: string; everyMs: number; sinceMs?: number; apiKey: string }[];
}

/**
 * Validates the schedules against the configured sources, pushing each problem (field and fix) to `problems`;
 * without `checkKeys`, an unset API key is not one (a command that runs no schedule).
 *
 * @example
 * const schedules = resolveSchedules(config.schedules, sources, process.env, problems);
 */
export function resolveSchedules(
  config: SchedulesConfig | undefined,
  sources: readonly Source[],
  environment: NodeJS.ProcessEnv,
  problems: string[],
  checkKeys = true,
): ResolvedSchedules {
  const duration = (field: string, text: unknown): number => {
    const ms = typeof text === "string" ? durationMs(text) : undefined;
    if (ms === undefined)
      problems.push(`${field}: ${JSON.stringify(text)} is not a duration; write e.g. 15m, 1h or 90d`);
    return ms ?? 1;
  };
  let prune: ResolvedSchedules["prune"];
  if (config?.prune) {
    const p = config.prune;
    const olderThanMs = duration("schedules.prune.olderThan", p.olderThan);
    const tombstonesOlderThanMs =
      p.tombstonesOlderThan === undefined
        ? defaultTombstoneHorizonMs(olderThanMs)
        : duration("schedules.prune.tombstonesOlderThan", p.tombstonesOlderThan);
    if (tombstonesOlderThanMs <= olderThanMs) {
      problems.push(
        "schedules.prune.tombstonesOlderThan: must be longer than olderThan (tombstones outlive rows)",
      );
    }
    if (!p.force) {
      const refusals = horizonRefusals(
        sources.map((s) => ({ name: s.name, provider: s.provider.name })),
        olderThanMs,
      );
      for (const r of refusals) {
        problems.push(
          `schedules.prune.olderThan: shorter than the ${Math.round(r.windowMs / 86_400_000)}-day replay window ` +
            `of source '${r.source}' (${r.provider}); raise it, or set schedules.prune.force: true`,
        );
      }
    }
    const batchSize = p.batchSize ?? SCHEDULED_PRUNE.batchSize;
    if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
      problems.push(
        `schedules.prune.batchSize: ${JSON.stringify(p.batchSize)} is not a whole number from 1 to 100000`,
      );
    }
    const duty = p.duty ?? SCHEDULED_PRUNE.duty;
    if (typeof duty !== "number" || !(duty > 0 && duty <= 1)) {
      problems.push(
        `schedules.prune.duty: ${JSON.stringify(p.duty)} is not a share of time; write a number above 0 and at most 1, e.g. 0.1`,
      );
    }
    prune = {
      olderThanMs,
      tombstonesOlderThanMs,
      everyMs: duration("schedules.prune.every", p.every),
      batchSize,
      duty,
      force: p.force ?? false,
    };
  }
  const reconcile: ResolvedSchedules["reconcile"][number][] = [];
  for (const [i, r] of (config?.reconcile ?? []).entries()) {
    const at = `schedules.reconcile[${i}]`;
    const source = sources.find((s) => s.name === r.source);
    if (source?.provider.name !== "stripe") {
      problems.push(
        `${at}.source: '${r.source}' is not a configured stripe source (only Stripe can be reconciled)`,
      );
    }
    const apiKey = isEnvRef(r.apiKey) ? environment[r.apiKey.env] : r.apiKey;
    if (!apiKey && checkKeys) {
      const fix = isEnvRef(r.apiKey)
        ? `set the environment variable ${r.apiKey.env}`
        : "give a Stripe API key";
      problems.push(`${at}.apiKey: empty; ${fix}`);
    }
    reconcile.push({
      source: r.source,
      everyMs: duration(`${at}.every`, r.every),
      ...(r.since !== undefined && { sinceMs: duration(`${at}.since`, r.since) }),
      apiKey: apiKey ?? "",
    });
  }
  return { ...(prune && { prune }), reconcile };
}
