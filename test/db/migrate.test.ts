import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { after, test } from "node:test";
import { loadMigrations, migrate, migrationsCurrent } from "../../src/db/migrate.js";
import { createPool } from "hookledger";
import { runCli } from "../helpers/cli.js";
import { testDatabaseUrl } from "../helpers/db.js";
import { dumpSchema } from "../helpers/schema.js";

const pool = createPool({ connectionString: testDatabaseUrl(), role: "admin", max: 2 });
const schemas: string[] = [];
after(async () => {
  for (const s of schemas) await pool.query(`drop schema if exists "${s}" cascade`);
  await pool.end();
});
function newSchema(): string {
  const s = `m_${randomBytes(5).toString("hex")}`;
  schemas.push(s);
  return s;
}

function runMigrateProcess(schema: string) {
  return runCli(["migrate"], {
    env: { ...process.env, DATABASE_URL: testDatabaseUrl(), HOOKLEDGER_SCHEMA: schema },
  });
}

test("hookledger migrate run by ten processes at once applies each migration exactly once", async () => {
  const schema = newSchema();
  const results = await Promise.all(Array.from({ length: 10 }, () => runMigrateProcess(schema)));
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  // Each migration takes the lock in its own transaction (so that it works behind a transaction pooler): processes
  // may share the work, but each migration is applied by exactly one of them.
  const applied = results.flatMap((r) =>
    r.stdout.startsWith("applied ") ? r.stdout.slice("applied ".length).trim().split(", ") : [],
  );
  assert.deepEqual(
    [...applied].sort(),
    (await loadMigrations()).map((m) => m.name).sort(),
    "each migration applied by exactly one process",
  );
  const rows = await pool.query(`select id from "${schema}".migrations order by id`);
  assert.deepEqual(
    rows.rows.map((r) => r.id),
    (await loadMigrations()).map((m) => m.id),
  );
  assert.equal(await migrationsCurrent(pool, schema), true);
});

test("migrate a second time applies nothing", async () => {
  const schema = newSchema();
  assert.ok((await migrate(pool, schema)).length > 0);
  assert.deepEqual(await migrate(pool, schema), []);
});

// The committed dump (test/fixtures/schema.txt) is the reviewed shape of the ledger; a migration that changes it
// must update the dump in the same commit (HOOKLEDGER_UPDATE_SCHEMA=1 npm test rewrites it).
test("the migrated schema matches the committed dump", async () => {
  const schema = newSchema();
  await migrate(pool, schema);
  const dump = await dumpSchema(pool, schema);
  const file = new URL("../fixtures/schema.txt", import.meta.url);
  if (process.env.HOOKLEDGER_UPDATE_SCHEMA === "1") await writeFile(file, dump);
  assert.equal(dump, await readFile(file, "utf8"));
});
