import type { Pool } from "hookledger";

/**
 * A stable text dump of a schema's tables, columns, constraints, indexes, storage parameters, triggers and functions
 * (by name and arguments), read from the catalogs (pg_dump is not
 * shipped with the embedded server), with the schema name replaced by `:schema`.
 */
export async function dumpSchema(pool: Pool, schema: string): Promise<string> {
  const columns = await pool.query(
    `select table_name, column_name, data_type, is_nullable, coalesce(column_default, '') as dflt, is_identity
     from information_schema.columns where table_schema = $1 order by table_name, ordinal_position`,
    [schema],
  );
  const constraints = await pool.query(
    `select c.relname as table_name, con.conname, pg_get_constraintdef(con.oid) as def
     from pg_constraint con join pg_class c on c.oid = con.conrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = $1 order by c.relname, con.conname`,
    [schema],
  );
  const indexes = await pool.query(
    "select tablename, indexname, indexdef from pg_indexes where schemaname = $1 order by tablename, indexname",
    [schema],
  );
  // Storage parameters (a table's own autovacuum settings, migration 009).
  const options = await pool.query(
    `select c.relname, array_to_string(c.reloptions, ',') as options from pg_class c
     join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = $1 and c.reloptions is not null order by c.relname`,
    [schema],
  );
  const triggers = await pool.query(
    `select c.relname, t.tgname, pg_get_triggerdef(t.oid) as def from pg_trigger t
     join pg_class c on c.oid = t.tgrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = $1 and not t.tgisinternal order by c.relname, t.tgname`,
    [schema],
  );
  const functions = await pool.query(
    `select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name from pg_proc p
     join pg_namespace n on n.oid = p.pronamespace where n.nspname = $1 order by 1`,
    [schema],
  );
  // The day partitions of event bodies (migration 010) are named by their day: they change with the date.
  const dated = (table: string) => /^event_bodies_(before_)?\d{8}$/.test(table);
  const lines: string[] = [];
  for (const c of columns.rows.filter((r) => !dated(r.table_name))) {
    lines.push(
      `column ${c.table_name}.${c.column_name} ${c.data_type}${c.is_nullable === "NO" ? " not null" : ""}` +
        `${c.dflt ? ` default ${c.dflt}` : ""}${c.is_identity === "YES" ? " identity" : ""}`,
    );
  }
  for (const c of constraints.rows.filter((r) => !dated(r.table_name)))
    lines.push(`constraint ${c.table_name}.${c.conname} ${c.def}`);
  for (const i of indexes.rows.filter((r) => !dated(r.tablename)))
    lines.push(`index ${i.tablename}.${i.indexname} ${i.indexdef}`);
  for (const o of options.rows.filter((r) => !dated(r.relname)))
    lines.push(`options ${o.relname} ${o.options}`);
  for (const t of triggers.rows) lines.push(`trigger ${t.relname}.${t.tgname} ${t.def}`);
  for (const f of functions.rows) lines.push(`function ${f.name}`);
  return `${lines.join("\n").replaceAll(`"${schema}".`, ":schema.").replaceAll(`${schema}.`, ":schema.")}\n`;
}
