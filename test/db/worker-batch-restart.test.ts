import assert from "node:assert/strict";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import {
  createPool,
  Handlers,
  ledgerContext,
  migrate,
  type Pool,
  silentLogger,
  startWorker,
} from "hookledger";
import { type Cluster, startCluster } from "../../chaos/cluster.js";
import { waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { serverPort } from "../helpers/net.js";

// docs/architecture.md §6: a database restart under load loses nothing and applies nothing twice. The cluster is
// this test's own (the chaos suite's helper), since it is restarted with every backend killed at once.

let dir: string;
let cluster: Cluster;
let admin: Pool;
const ledger = ledgerContext("restart");

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "hookledger-batch-restart-"));
  // As root the server runs as the postgres user, which must reach its data directory.
  await chmod(dir, 0o755);
  cluster = await startCluster(dir, await serverPort());
  admin = createPool({ connectionString: cluster.url, role: "admin", max: 2 });
  await migrate(admin, ledger.schema);
  await admin.query(`create table ${ledger.s}.applied (event_id text not null)`);
});

after(async () => {
  await admin?.end().catch(() => {});
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function counts(): Promise<{ settled: number; total: number; retried: number }> {
  const { rows } = await admin.query<{ settled: number; total: number; retried: number }>(
    `select count(*) filter (where status = 'settled')::int as settled, count(*)::int as total,
       count(*) filter (where attempts > 1)::int as retried
     from ${ledger.s}.events`,
  );
  return rows[0] ?? { settled: 0, total: 0, retried: 0 };
}

test("a database restart (immediate) while batches run: every event settles, each applied exactly once", async () => {
  const total = 300;
  for (let i = 0; i < total; i++) await claimTestEvent(admin, ledger, { source: "restart", id: `r_${i}` });
  const pool = createPool({ connectionString: cluster.url, role: "work", max: 3 });
  // Once a quarter has settled, the next handler to run opens `underWay` and holds its batch's transaction open
  // across the restart, so the restart always lands inside a batch (left to timing, it once fell between them).
  let quarter = false;
  let opened = false;
  let open: () => void = () => {};
  const underWay = new Promise<void>((resolve) => {
    open = resolve;
  });
  const worker = startWorker({
    pool,
    connectionString: cluster.url,
    ledger,
    handlers: new Handlers().on("restart", "*", async (ctx) => {
      await ctx.tx.query(`insert into ${ledger.s}.applied (event_id) values ($1)`, [ctx.event.id]);
      if (quarter && !opened) {
        opened = true;
        open();
        await sleep(1000);
      }
      await sleep(20);
    }),
    log: silentLogger(),
    concurrency: 2,
    pollIntervalMs: 100,
  });
  try {
    await waitFor(
      "a quarter of the events settled",
      async () => (await counts()).settled >= total / 4,
      60_000,
    );
    quarter = true;
    await underWay;
    await cluster.restartImmediate();
    await waitFor(
      "every event settled after the restart",
      async () => (await counts().catch(() => ({ settled: 0 }))).settled === total,
      90_000,
    );
  } finally {
    await worker.stop(10_000);
    await pool.end();
  }
  const after = await counts();
  assert.equal(after.total, total);
  // The batches the restart cut short were counted, rolled back and run again: applied once all the same.
  assert.ok(after.retried > 0, "no batch was under way at the restart");
  const { rows } = await admin.query<{ n: number; distinct: number }>(
    `select count(*)::int as n, count(distinct event_id)::int as distinct from ${ledger.s}.applied`,
  );
  assert.deepEqual(rows, [{ n: total, distinct: total }]);
  const outcomes = await admin.query(
    `select status, outcome, count(*)::int as n from ${ledger.s}.events group by 1, 2`,
  );
  assert.deepEqual(outcomes.rows, [{ status: "settled", outcome: "applied", n: total }]);
});
