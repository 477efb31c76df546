import { quoteIdent } from "../db/pool.js";

/** Where the ledger lives; built once so the schema name is escaped once. */
export interface LedgerContext {
  /** The schema name as configured, e.g. `hookledger`. */
  readonly schema: string;
  /** The schema name quoted for SQL text. */
  readonly s: string;
  /** The LISTEN/NOTIFY channel that wakes workers when an event is claimed. */
  readonly channel: string;
}

/**
 * Builds the ledger context for a schema.
 *
 * @example
 * const ledger = ledgerContext("hookledger");
 */
export function ledgerContext(schema = "hookledger"): LedgerContext {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,50}$/.test(schema)) {
    throw new Error(`invalid schema name ${JSON.stringify(schema)}: use letters, digits and underscores`);
  }
  return { schema, s: quoteIdent(schema), channel: `${schema}_claimed` };
}

/** Anything that runs a parameterised query: a pool, or a client inside a transaction. */
export interface Queryable {
  query<R extends object = Record<string, unknown>>(
    query: string | { readonly name?: string; readonly text: string; readonly values?: unknown[] },
    values?: unknown[],
  ): Promise<{ rows: R[]; rowCount: number | null }>;
}

/** A named, prepared statement for one schema. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/**
 * Declares a ledger statement once; its text is built per schema on first use and then reused, and its name lets
 * `pg` prepare it once per connection.
 */
export function statement(name: string, build: (s: string) => string): (ledger: LedgerContext) => Statement {
  const bySchema = new Map<string, Statement>();
  return (ledger) => {
    let stmt = bySchema.get(ledger.schema);
    if (!stmt) {
      stmt = { name: `hookledger.${ledger.schema}.${name}`, text: build(ledger.s) };
      bySchema.set(ledger.schema, stmt);
    }
    return stmt;
  };
}
