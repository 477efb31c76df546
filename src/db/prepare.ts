import type { Logger } from "../log.js";
import { loadMigrations, migrate } from "./migrate.js";
import { checkPooler } from "./pooler-check.js";
import type { PoolerMode } from "./pooler.js";
import { type Pool, quoteIdent } from "./pool.js";
import { pause, untilDatabase } from "./wait.js";

/** Why a starting service is not ready yet (the `/readyz` reasons it can give). */
export type StartState = "database_unreachable" | "migrations_pending";

/** Options of {@link prepareLedger}. */
export interface PrepareLedgerOptions {
  readonly pool: Pool;
  readonly schema: string;
  /** Apply the migrations (the default); `false` only checks them and waits until someone else applies them. */
  readonly migrate: boolean;
  /** What stands in front of Postgres, checked first (`checkPooler`). @defaultValue "none" */
  readonly pooler?: PoolerMode;
  /** Runs once the schema is current (the demo's tables, for instance). */
  readonly setup?: ((pool: Pool) => Promise<void>) | undefined;
  readonly log: Logger;
  /** `host:port/database`, for the log. */
  readonly where: string;
  readonly signal?: AbortSignal | undefined;
  /** Hears each change of state; `undefined` once the ledger is ready. */
  readonly onState?: (state: StartState | undefined) => void;
}

class MigrationsPending extends Error {
  constructor(readonly pending: readonly string[]) {
    super("migrations pending");
  }
}

/**
 * What a starting service does before it serves: waits for the database with back-off (see `untilDatabase`), checks
 * that its sessions have the claim's settings through any pooler (`checkPooler`: a mismatch rejects), then applies
 * the migrations, or with `migrate: false` waits until they are applied, saying once which command to run;
 * then runs `setup`. Transient failures at any step are waited out; other failures reject. Aborting `signal` stops
 * the wait.
 *
 * @example
 * await prepareLedger({ pool: admin, schema: "hookledger", migrate: true, log, where: "db:5432/app" });
 */
export async function prepareLedger(options: PrepareLedgerOptions): Promise<void> {
  const { pool, schema, log, signal } = options;
  const waiting = { log, where: options.where, signal };
  let toldPending = false;
  for (;;) {
    try {
      await untilDatabase(
        async () => {
          await checkPooler(pool, options.pooler ?? "none");
          if (options.migrate) {
            const applied = await migrate(pool, schema);
            if (applied.length > 0) log.info({ applied, schema }, "migrations applied");
          } else {
            const pending = await pendingMigrations(pool, schema);
            if (pending.length > 0) throw new MigrationsPending(pending);
          }
          await options.setup?.(pool);
        },
        {
          ...waiting,
          onWait: (reason) => options.onState?.(reason === undefined ? undefined : "database_unreachable"),
        },
      );
      options.onState?.(undefined);
      return;
    } catch (error) {
      if (!(error instanceof MigrationsPending)) throw error;
      options.onState?.("migrations_pending");
      if (!toldPending) {
        log.warn(
          { schema, pending: error.pending },
          `schema '${schema}' is not migrated: run \`hookledger migrate\` with a DATABASE_URL whose role may change it (pending: ${error.pending.join(", ")}); not ready until then`,
        );
        toldPending = true;
      }
    }
    // The migration is someone else's deploy step: look again now and then, without hurrying them.
    await pause(2000, signal);
  }
}

/**
 * The shipped migrations `schema` lacks, by name (all of them when the ledger was never created).
 *
 * @example
 * const pending = await pendingMigrations(pool, "hookledger"); // [] when current
 */
export async function pendingMigrations(pool: Pool, schema: string): Promise<string[]> {
  const migrations = await loadMigrations();
  try {
    const { rows } = await pool.query<{ id: number }>(`select id from ${quoteIdent(schema)}.migrations`);
    const done = new Set(rows.map((r) => r.id));
    return migrations.filter((m) => !done.has(m.id)).map((m) => m.name);
  } catch (error) {
    // undefined_table / invalid_schema_name: never migrated.
    const code = (error as { code?: string }).code;
    if (code === "42P01" || code === "3F000") return migrations.map((m) => m.name);
    throw error;
  }
}
