// Connection strings with several hosts (docs/operations.md, "High availability"), against a real primary and its
// streaming standby, each a cluster of its own started from Debian's PostgreSQL binaries.
import assert from "node:assert/strict";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createHookledger, createPool, silentLogger, withTransaction } from "hookledger";
import { type Cluster, startCluster, startStandby } from "../../chaos/cluster.js";
import { runCli } from "../helpers/cli.js";
import { serve, stripeBody, stripeHeaders } from "../helpers/http.js";
import { freePort } from "../helpers/net.js";

let dir: string;
let primary: Cluster;
let standby: Cluster & { promote(): Promise<void> };
const at = (c: Cluster) => `127.0.0.1:${c.port}`;
const url = (hosts: Cluster[], attrs?: string) =>
  `postgres://postgres@${hosts.map(at).join(",")}/postgres${attrs ? `?target_session_attrs=${attrs}` : ""}`;

/** The rows of `sql` run on `cluster` alone. */
async function rowsOn(cluster: Cluster, sql: string): Promise<unknown[]> {
  const pool = createPool({ connectionString: `postgres://postgres@${at(cluster)}/postgres`, role: "admin" });
  try {
    return (await pool.query(sql)).rows;
  } finally {
    await pool.end();
  }
}

/** A pool on `connectionString` that records each host switch. */
function watched(connectionString: string) {
  const switched: string[] = [];
  const pool = createPool({ connectionString, role: "admin", onHostSwitch: (to) => switched.push(to) });
  return { pool, switched };
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "hookledger-hosts-"));
  await chmod(dir, 0o755);
  primary = await startCluster(dir, await freePort(), "primary");
  standby = await startStandby(dir, primary.port, await freePort());
});
after(async () => {
  await standby?.stop();
  await primary?.stop();
  await rm(dir, { recursive: true, force: true });
});

test("createHookledger on a multi-host URL with the standby first migrates and claims on the primary", async () => {
  const hl = createHookledger({
    connectionString: url([standby, primary], "read-write"),
    schema: "hosts_a",
    sources: [{ name: "stripe", provider: "stripe", secrets: ["whsec_test_a"] }],
    log: silentLogger(),
  });
  const server = await serve(hl);
  try {
    await hl.migrate();
    const body = stripeBody("evt_h1");
    const answer = await fetch(`${server.url}/webhooks/stripe`, {
      method: "POST",
      headers: stripeHeaders(body),
      body,
    });
    assert.equal(answer.status, 200);
    assert.equal(((await answer.json()) as { status: string }).status, "accepted");
    assert.deepEqual(
      await rowsOn(primary, "select dedupe_key from hosts_a.events"),
      [{ dedupe_key: "evt_h1" }],
      "the claim is on the primary",
    );
  } finally {
    await server.close();
    await hl.close();
  }
});

test("createPool with target_session_attrs=read-only connects to the standby, listed second", async () => {
  const { pool, switched } = watched(url([primary, standby], "read-only"));
  try {
    const { rows } = await pool.query<{ recovery: boolean }>("select pg_is_in_recovery() as recovery");
    assert.deepEqual(rows, [{ recovery: true }]);
    assert.deepEqual(switched, [at(standby)], "the switch from the first host is reported once");
  } finally {
    await pool.end();
  }
});

test("createPool on hosts none of which is writable fails naming each host and what it is", async () => {
  const pool = createPool({ connectionString: url([standby], "read-write"), role: "admin" });
  try {
    await assert.rejects(
      pool.query("select 1"),
      new RegExp(`no database host is read-write \\(target_session_attrs\\): ${at(standby)}: a standby`),
    );
  } finally {
    await pool.end();
  }
});

test("hookledger migrate on a multi-host URL migrates the primary", async () => {
  const r = await runCli(["migrate"], {
    cwd: dir,
    env: {
      ...process.env,
      DATABASE_URL: url([standby, primary], "read-write"),
      HOOKLEDGER_SCHEMA: "hosts_b",
    },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await rowsOn(primary, "select count(*)::int as n from hosts_b.events"), [{ n: 0 }]);
});

test("a pool drops a live connection that answers 25006 and writes on the next writable host", async () => {
  const other = await startCluster(dir, await freePort(), "other");
  const setting = createPool({
    connectionString: `postgres://postgres@${at(primary)}/postgres`,
    role: "admin",
    max: 1,
  });
  const { pool, switched } = watched(url([primary, other], "read-write"));
  try {
    for (const c of [primary, other]) await rowsOn(c, "create table hosts_demoted (n int)");
    await pool.query("insert into hosts_demoted values (1)");
    // What a demoted primary answers its old connections: every write fails as in a read-only transaction.
    await setting.query("alter system set default_transaction_read_only = on");
    await setting.query("select pg_reload_conf()");
    let refused: unknown;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      refused = await withTransaction(pool, (tx) => tx.query("insert into hosts_demoted values (2)")).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (refused === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal((refused as { code?: string } | undefined)?.code, "25006");
    // withTransaction rolls back and returns a connection after an error the server sent; this one must not stay.
    await withTransaction(pool, (tx) => tx.query("insert into hosts_demoted values (3)"));
    assert.deepEqual(await rowsOn(other, "select n from hosts_demoted"), [{ n: 3 }]);
    assert.deepEqual(switched, [at(other)]);
  } finally {
    await setting.query("set default_transaction_read_only = off");
    await setting.query("alter system reset default_transaction_read_only");
    await setting.query("select pg_reload_conf()");
    await setting.end();
    await pool.end();
    await other.stop();
  }
});

test("a pool on a host list moves to the promoted standby after the primary is killed", async () => {
  const { pool, switched } = watched(url([primary, standby], "read-write"));
  try {
    await pool.query("create table hosts_failover (n int)");
    for (let i = 0; i < 40; i++) {
      const [row] = (await rowsOn(standby, "select to_regclass('hosts_failover')::text as t")) as {
        t: string | null;
      }[];
      if (row?.t) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await primary.stop(); // immediate: as a kill -9 of the server
    await standby.promote();
    let recovered = false;
    for (let i = 0; i < 40 && !recovered; i++) {
      recovered = await pool.query("insert into hosts_failover values (1)").then(
        () => true,
        () => false,
      );
      if (!recovered) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.ok(recovered, "writes go on, on the promoted standby");
    assert.deepEqual(switched, [at(standby)]);
    const { rows } = await pool.query<{ recovery: boolean }>("select pg_is_in_recovery() as recovery");
    assert.deepEqual(rows, [{ recovery: false }]);
  } finally {
    await pool.end();
  }
});
