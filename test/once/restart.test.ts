import assert from "node:assert/strict";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { type EmbeddedDatabase, startEmbeddedPostgres } from "hookledger";
import { migrate } from "hookledger";
import { createPool, type Pool } from "hookledger";
import { ledgerContext } from "hookledger";
import { silentLogger } from "hookledger";
import { Handlers } from "hookledger";
import { startWorker, type Worker } from "hookledger";
import { waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { freePort } from "../helpers/net.js";

const log = silentLogger();
const cleanup: (() => Promise<unknown>)[] = [];
let over = false;

after(async () => {
  over = true;
  for (const step of cleanup.reverse()) await step().catch(() => {});
});

test("workers reconnect and everything settles when the database restarts under load", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "hookledger-restart-"));
  // As root the server runs as the unprivileged postgres user, which must be able to enter this directory.
  await chmod(dir, 0o755);
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const dataDir = join(dir, "pg");
  const port = await freePort();
  let db: EmbeddedDatabase = await startEmbeddedPostgres({ dataDir, port, log });
  cleanup.push(() => db.stop());
  const url = db.connectionString;

  const schema = "restart";
  const ledger = ledgerContext(schema);
  const admin = createPool({ connectionString: url, role: "admin", max: 2 });
  const ingest = createPool({ connectionString: url, role: "ingest", max: 8 });
  cleanup.push(
    () => admin.end(),
    () => ingest.end(),
  );
  await migrate(admin, schema);
  await admin.query(`create table "${schema}".applied (event_id text not null, worker int not null)`);

  const pools: Pool[] = [];
  const workers: Worker[] = [];
  for (let i = 0; i < 4; i++) {
    const pool = createPool({ connectionString: url, role: "work", max: 3 });
    pools.push(pool);
    const handlers = new Handlers().on("restart", "*", async (ctx) => {
      // An await between statements (an API call, say) leaves the connection checked out and idle in its
      // transaction: the restart must find some attempts there, not only inside a query.
      await sleep(Math.random() * 20);
      await ctx.tx.query(`insert into "${schema}".applied (event_id, worker) values ($1, $2)`, [
        ctx.event.id,
        i,
      ]);
    });
    workers.push(
      startWorker({
        pool,
        connectionString: url,
        ledger,
        handlers,
        log,
        concurrency: 2,
        pollIntervalMs: 200,
        retry: { baseDelayMs: 50, maxDelayMs: 500 },
      }),
    );
  }
  cleanup.push(async () => {
    await Promise.all(workers.map((w) => w.stop(5000)));
    await Promise.all(pools.map((p) => p.end()));
  });

  /** Claims ids `from`…`to - 1`, 20 at a time, retrying each claim until the database answers. */
  const claimRange = async (from: number, to: number) => {
    for (let i = from; i < to; i += 20) {
      const batch = Array.from({ length: Math.min(20, to - i) }, (_, k) => `r_${i + k}`);
      await Promise.all(
        batch.map(async (id) => {
          const deadline = Date.now() + 120_000;
          for (;;) {
            try {
              await claimTestEvent(ingest, ledger, { source: "restart", id });
              return;
            } catch (error) {
              if (Date.now() > deadline) throw error;
              await sleep(200);
            }
          }
        }),
      );
    }
  };
  const settledCount = async () => {
    const { rows } = await admin.query<{ n: number }>(
      `select count(*)::int as n from "${schema}".events where status = 'settled'`,
    );
    return rows[0]?.n ?? 0;
  };

  await claimRange(0, 500);
  // Restart while the backlog is still being worked through.
  await waitFor("the workers to be busy", async () => (await settledCount()) > 0, 60_000);
  t.diagnostic(`settled when the server stopped: at least ${await settledCount()} of 500`);
  await db.stop();
  const more = claimRange(500, 1000);
  await sleep(1500);
  db = await startEmbeddedPostgres({ dataDir, port, log });
  if (over) {
    // The test already timed out and cleaned up: leave no server behind.
    await db.stop();
    return;
  }
  await more;

  await waitFor(
    "1,000 settled events",
    async () => {
      try {
        return (await settledCount()) === 1000;
      } catch {
        return false;
      }
    },
    180_000,
  );
  const { rows } = await admin.query<{ total: number; distinct: number }>(
    `select count(*)::int as total, count(distinct event_id)::int as distinct from "${schema}".applied`,
  );
  assert.deepEqual(rows, [{ total: 1000, distinct: 1000 }]);
  const outcomes = await admin.query(
    `select status, outcome, count(*)::int as n from "${schema}".events group by 1, 2`,
  );
  assert.deepEqual(outcomes.rows, [{ status: "settled", outcome: "applied", n: 1000 }]);
});
