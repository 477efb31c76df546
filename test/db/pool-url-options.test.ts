// createPool on a URL that carries its own `options` (docs/operations.md, "Behind PgBouncer": a start checks that
// hookledger's session settings are in effect). pg lets a URL's `options` replace the ones given beside it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkPooler, createPool } from "hookledger";
import { testDatabaseUrl } from "../helpers/db.js";

test("createPool on a URL with options=-c search_path keeps the URL's setting and pins synchronous_commit", async () => {
  const url = new URL(testDatabaseUrl());
  url.searchParams.set("options", "-c search_path=app_schema -c synchronous_commit=off");
  const pool = createPool({ connectionString: url.toString(), role: "admin", max: 1 });
  try {
    const { rows } = await pool.query(
      "select current_setting('search_path') as path, current_setting('synchronous_commit') as sync",
    );
    assert.deepEqual(rows[0], { path: "app_schema", sync: "on" });
    await checkPooler(pool, "none");
  } finally {
    await pool.end();
  }
});
