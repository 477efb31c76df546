// The batched claim (docs/architecture.md §3, "Concurrent claims are committed in batches"), driven directly: claims
// made in one turn of the event loop leave as one batch, so each test knows which claims share a statement.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import pg from "pg";
import { createLogger, runPrune } from "hookledger";
import { createPool, type Pool } from "../../src/db/pool.js";
import { claimEvent, type ClaimInput, type ClaimResult } from "../../src/ledger/claim.js";
import { type ClaimBatcherOptions, claimBatcher } from "../../src/ledger/claim-batch.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { ledgerCounts } from "../helpers/http.js";

let t: TestLedger;
const pools: Pool[] = [];
before(async () => {
  t = await freshLedger();
});
after(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await t.drop();
});

/**
 * An ingest pool made by the same module copy as the batcher (src/, not dist/), so that the batcher sees one of
 * hookledger's own pools and claims in autocommit; generous timeouts, as in freshLedger's pools.
 */
function ingestPool(max = 4): Pool {
  const pool = createPool({
    connectionString: t.url,
    role: "ingest",
    max,
    connectTimeoutMs: 10_000,
    statementTimeoutMs: 30_000,
  });
  pools.push(pool);
  return pool;
}

function input(id: string, options: { source?: string; body?: string; onBody?: boolean } = {}): ClaimInput {
  const body = options.body ?? JSON.stringify({ id });
  return {
    source: options.source ?? "batch",
    event: { dedupeKey: id, type: "t", payload: JSON.parse(body), dedupeOnBodyHash: options.onBody ?? false },
    body: Buffer.from(body),
    headers: {},
    secretIndex: 0,
    arrivedVia: "delivery",
  };
}

/** A real ingest pool that counts the statements sent through `pool.query`. */
function countingPool(max = 4): { pool: Pool; statements: () => number } {
  const pool = ingestPool(max);
  let n = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  Object.assign(pool, {
    query: (...args: unknown[]) => {
      n++;
      return query(...args);
    },
  });
  return { pool, statements: () => n };
}

/** A batcher whose warnings are kept, to see when a batch fell back to one claim per row. */
function batcher(db: Pool, options: Partial<ClaimBatcherOptions> = {}) {
  const warnings: { code?: string; msg: string }[] = [];
  const log = createLogger({
    level: "warn",
    format: "json",
    destination: { write: (line: string) => warnings.push(JSON.parse(line)) },
  });
  return { claims: claimBatcher({ db, ledger: t.ledger, log, ...options }), warnings };
}

/** Waits until a claim of this test's schema waits on a row another transaction inserted. */
const blockedOnLock = () =>
  waitFor("a claim to wait on the open one", async () => {
    const { rows } = await t.pool.query(
      "select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like $1",
      [`%${t.ledger.s}.events%`],
    );
    return rows.length > 0;
  });

/** An open transaction that has claimed `ids` and not committed. */
async function openClaim(ids: string[]): Promise<pg.PoolClient> {
  const holder = await t.pool.connect();
  await holder.query("begin");
  for (const id of ids) await claimEvent(holder, t.ledger, input(id));
  return holder;
}

const statuses = (results: ClaimResult[]) => results.map((r) => r.status);

test("claimBatcher sends the claims of one tick as one insert, and a lone claim alone", async () => {
  const { pool, statements } = countingPool();
  const { claims } = batcher(pool);
  const results = await Promise.all(Array.from({ length: 64 }, (_, i) => claims.claim(input(`tick-${i}`))));
  assert.deepEqual(new Set(statuses(results)), new Set(["accepted"]));
  assert.equal(statements(), 1);
  const { rows } = await t.pool.query(
    `select count(*)::int as n from ${t.ledger.s}.events where dedupe_key like 'tick-%'`,
  );
  assert.equal(rows[0].n, 64);
  assert.equal((await claims.claim(input("lone"))).status, "accepted");
  assert.equal(statements(), 2);
});

test("claimBatcher stores each row's own body byte for byte and its own payload, whatever their sizes", async () => {
  const { pool, statements } = countingPool();
  const { claims } = batcher(pool);
  // Bodies of 0 to 5,000 bytes, not UTF-8, with NUL and 0xff; payloads with quotes, backslashes, a long string.
  const rows = Array.from({ length: 40 }, (_, i) => {
    const body = Buffer.alloc((i * 127) % 5000, i);
    body[0] = 0xff;
    const payload = { i, quote: `"\\${"é".repeat(i)}`, nested: [{ n: i }], long: "x".repeat(i * 50) };
    return { id: `bytes-${i}`, body: i === 0 ? Buffer.alloc(0) : body, payload };
  });
  const results = await Promise.all(
    rows.map((row) =>
      claims.claim({
        ...input(row.id),
        body: row.body,
        event: { ...input(row.id).event, payload: row.payload },
      }),
    ),
  );
  assert.deepEqual(new Set(statuses(results)), new Set(["accepted"]));
  assert.equal(statements(), 1, "one statement for the 40 rows");
  const { rows: stored } = await t.pool.query<{ dedupe_key: string; body: Buffer; payload: unknown }>(
    `select dedupe_key, body, payload from ${t.ledger.s}.event_records where dedupe_key like 'bytes-%'`,
  );
  const byKey = new Map(stored.map((r) => [r.dedupe_key, r]));
  for (const row of rows) {
    assert.ok(byKey.get(row.id)?.body.equals(row.body), `${row.id}: body`);
    assert.deepEqual(byKey.get(row.id)?.payload, row.payload, `${row.id}: payload`);
  }
});

test("claimBatcher answers a key repeated in one batch once accepted, then duplicates counted per key", async () => {
  const { pool, statements } = countingPool();
  const { claims } = batcher(pool);
  const results = await Promise.all([
    claims.claim(input("same-tick", { body: '{"v":1}' })),
    claims.claim(input("same-tick", { body: '{"v":1}' })),
    claims.claim(input("same-tick", { body: '{"v":2}' })),
  ]);
  assert.deepEqual(results, [
    { status: "accepted", id: "same-tick" },
    { status: "duplicate", id: "same-tick", bodyMismatch: false },
    { status: "duplicate", id: "same-tick", bodyMismatch: true },
  ]);
  assert.equal(statements(), 2, "one insert, one duplicate lookup");
  const dup = await t.pool.query(
    `select count::int, body_mismatches::int from ${t.ledger.s}.duplicates where dedupe_key = 'same-tick'`,
  );
  assert.deepEqual(dup.rows, [{ count: 2, body_mismatches: 1 }]);
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "same-tick"), { events: 1, duplicates: 2 });
});

test("claimBatcher of a key another transaction holds waits for its commit, then answers duplicate", async () => {
  const holder = await openClaim(["held-commit"]);
  try {
    const { claims } = batcher(ingestPool());
    let settled = 0;
    const ids = ["held-commit", ...Array.from({ length: 9 }, (_, i) => `held-commit-n${i}`)];
    const pending = Promise.all(ids.map((id) => claims.claim(input(id)).finally(() => settled++)));
    await blockedOnLock();
    assert.equal(settled, 0, "the batch waits for the open claim, neighbours included");
    await holder.query("commit");
    const results = await pending;
    assert.deepEqual(results[0], { status: "duplicate", id: "held-commit", bodyMismatch: false });
    assert.deepEqual(statuses(results.slice(1)), Array(9).fill("accepted"));
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "held-commit"), { events: 1, duplicates: 1 });
  } finally {
    holder.release();
  }
});

test("claimBatcher of a key another transaction holds and rolls back is accepted", async () => {
  const holder = await openClaim(["held-rollback"]);
  try {
    const { claims } = batcher(ingestPool());
    const pending = Promise.all([claims.claim(input("held-rollback")), claims.claim(input("held-rb-n"))]);
    await blockedOnLock();
    await holder.query("rollback");
    assert.deepEqual(statuses(await pending), ["accepted", "accepted"]);
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "held-rollback"), { events: 1, duplicates: 0 });
  } finally {
    holder.release();
  }
});

test("claimBatcher with one row Postgres refuses in a batch of 50 fails that row only", async () => {
  const { claims, warnings } = batcher(ingestPool());
  // secret_index is a smallint: 99 999 is refused (22003) when the batch's array is read.
  const bad = { ...input("bad-row"), secretIndex: 99_999 };
  const ids = Array.from({ length: 49 }, (_, i) => `good-row-${i}`);
  const results = await Promise.allSettled([
    ...ids.slice(0, 20).map((id) => claims.claim(input(id))),
    claims.claim(bad),
    ...ids.slice(20).map((id) => claims.claim(input(id))),
  ]);
  const refused = results.filter((r) => r.status === "rejected");
  assert.equal(refused.length, 1);
  assert.equal((refused[0] as PromiseRejectedResult).reason.code, "22003");
  assert.equal(results[20]?.status, "rejected");
  const accepted = results.filter((r) => r.status === "fulfilled" && r.value.status === "accepted");
  assert.equal(accepted.length, 49);
  assert.deepEqual(
    warnings.map((w) => w.code),
    ["22003"],
    "the batch was refused once, then claimed row by row",
  );
  const { rows } = await t.pool.query(
    `select count(*)::int as n from ${t.ledger.s}.events where dedupe_key like 'good-row-%' or dedupe_key = 'bad-row'`,
  );
  assert.equal(rows[0].n, 49);
});

test("claimBatcher: two batches with the same keys in reverse order never deadlock (40 rounds)", async () => {
  const a = batcher(ingestPool(1));
  const b = batcher(ingestPool(1));
  for (let round = 0; round < 40; round++) {
    const ids = Array.from({ length: 30 }, (_, i) => `cross-${round}-${String(i).padStart(2, "0")}`);
    const [left, right] = await Promise.all([
      Promise.all(ids.map((id) => a.claims.claim(input(id)))),
      Promise.all([...ids].reverse().map((id) => b.claims.claim(input(id)))),
    ]);
    right.reverse();
    ids.forEach((id, i) => {
      const pair = [left[i]?.status, right[i]?.status].sort();
      assert.deepEqual(pair, ["accepted", "duplicate"], `${id}: one claim wins, the other is a duplicate`);
    });
  }
  assert.deepEqual([...a.warnings, ...b.warnings], [], "no batch was refused (a deadlock would be 40P01)");
});

test("claimBatcher when the database ends the connection mid-batch rejects every claim of the batch", async () => {
  const holder = await openClaim(["outage-0"]);
  try {
    const { claims } = batcher(ingestPool());
    const ids = Array.from({ length: 50 }, (_, i) => `outage-${i}`);
    const pending = Promise.allSettled(ids.map((id) => claims.claim(input(id))));
    await blockedOnLock();
    await t.pool.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where wait_event_type = 'Lock' and query like $1",
      [`%${t.ledger.s}.events%`],
    );
    const results = await pending;
    assert.deepEqual(new Set(results.map((r) => r.status)), new Set(["rejected"]));
    await holder.query("rollback");
    const { rows } = await t.pool.query(
      `select count(*)::int as n from ${t.ledger.s}.events where dedupe_key like 'outage-%'`,
    );
    assert.equal(rows[0].n, 0, "nothing of the batch committed");
  } finally {
    holder.release();
  }
});

test("claimBatcher dedupes a GitHub body re-sent under another id in the same batch", async () => {
  const { claims } = batcher(ingestPool());
  const body = '{"ref":"refs/heads/main","after":"batch"}';
  const results = await Promise.all(
    ["guid-b", "guid-a", "guid-c"].map((id) => claims.claim(input(id, { source: "gh", body, onBody: true }))),
  );
  // Rows are inserted in key order, so the smallest id wins within one batch.
  assert.deepEqual(results, [
    { status: "duplicate", id: "guid-a", bodyMismatch: false },
    { status: "accepted", id: "guid-a" },
    { status: "duplicate", id: "guid-a", bodyMismatch: false },
  ]);
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "guid-a", "gh"), { events: 1, duplicates: 2 });
});

test("claimBatcher answers a pruned key as a duplicate from its tombstone, writing nothing", async () => {
  const { claims } = batcher(ingestPool());
  await claims.claim(input("pruned", { source: "old" }));
  await t.pool.query(
    `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied',
       settled_at = now() - interval '100 days', received_at = now() - interval '101 days'
     where source = 'old'`,
  );
  const report = await runPrune(t.pool, t.ledger, {
    sources: [{ name: "old", provider: "stripe" }],
    olderThanMs: 90 * 86_400_000,
    tombstonesOlderThanMs: 365 * 86_400_000,
  });
  assert.equal(report.pruned, 1);
  const results = await Promise.all([
    claims.claim(input("pruned", { source: "old" })),
    claims.claim(input("fresh", { source: "old" })),
  ]);
  assert.deepEqual(results, [
    { status: "duplicate", id: "pruned", bodyMismatch: false },
    { status: "accepted", id: "fresh" },
  ]);
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "pruned", "old"), { events: 0, duplicates: 0 });
});

test("claimBatcher on an app's own pool (serializable, async commit) still waits for an open claim", async () => {
  const app = new pg.Pool({
    connectionString: t.url,
    options: "-c default_transaction_isolation=serializable -c synchronous_commit=off",
    max: 2,
  });
  const holder = await openClaim(["app-held"]);
  try {
    const { claims } = batcher(app as Pool);
    const pending = Promise.all([claims.claim(input("app-held")), claims.claim(input("app-n"))]);
    await blockedOnLock();
    await holder.query("commit");
    assert.deepEqual(await pending, [
      { status: "duplicate", id: "app-held", bodyMismatch: false },
      { status: "accepted", id: "app-n" },
    ]);
  } finally {
    holder.release();
    await app.end();
  }
});
