import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { claimEvent, type ClaimInput, Handlers, migrate, silentLogger, startWorker } from "hookledger";
import { freshLedger, type TestLedger, testDatabaseUrl, waitFor } from "../helpers/db.js";

// The day partitions of event bodies (migration 010, docs/architecture.md "The ledger's shape").

let t: TestLedger;
before(async () => {
  t = await freshLedger();
});
after(() => t.drop());

const dayName = (offsetDays: number) =>
  `event_bodies_${new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10).replaceAll("-", "")}`;

async function partitions(): Promise<string[]> {
  const { rows } = await t.pool.query<{ name: string }>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = $1::regclass order by 1`,
    [`${t.ledger.s}.event_bodies`],
  );
  return rows.map((r) => r.name);
}

const input = (id: string): ClaimInput => ({
  source: "stripe",
  event: { dedupeKey: id, type: "t", payload: { id }, dedupeOnBodyHash: false },
  body: Buffer.from(JSON.stringify({ id })),
  headers: {},
  secretIndex: 0,
  arrivedVia: "delivery",
});

// A worker with no handlers: events it runs settle unhandled.
const idleWorker = (options: { makePartitions?: boolean }) =>
  startWorker({
    pool: t.pool,
    ledger: t.ledger,
    connectionString: testDatabaseUrl(),
    handlers: new Handlers(),
    log: silentLogger(),
    ...options,
  });

test("startWorker makes the day partitions of the week ahead that are missing", async () => {
  const ahead = dayName(7);
  await t.pool.query(`drop table ${t.ledger.s}.${ahead}`);
  assert.ok(!(await partitions()).includes(ahead));
  const worker = idleWorker({});
  try {
    await waitFor(`partition ${ahead}`, async () => (await partitions()).includes(ahead), 10_000);
  } finally {
    await worker.stop();
  }
});

test("startWorker with makePartitions false leaves a missing day to migrate(), which makes it", async () => {
  const ahead = dayName(6);
  await t.pool.query(`drop table ${t.ledger.s}.${ahead}`);
  const worker = idleWorker({ makePartitions: false });
  try {
    // The worker is running: an event claimed now settles (unhandled), and the day is still missing.
    await claimEvent(t.pool, t.ledger, input("evt_worker_runs"));
    await waitFor("the event settled", async () => {
      const { rows } = await t.pool.query(
        `select status from ${t.ledger.s}.events where dedupe_key = 'evt_worker_runs'`,
      );
      return rows[0]?.status === "settled";
    });
    assert.ok(!(await partitions()).includes(ahead));
  } finally {
    await worker.stop();
  }
  await migrate(t.pool, t.schema);
  assert.ok((await partitions()).includes(ahead));
});

test("claimEvent on a day without a partition stores the body in the default partition; the day is then left to it", async () => {
  const today = dayName(0);
  // Detached, not dropped: a body claimed around midnight may be in it.
  await t.pool.query(`alter table ${t.ledger.s}.event_bodies detach partition ${t.ledger.s}.${today}`);
  const result = await claimEvent(t.pool, t.ledger, input("evt_no_partition"));
  assert.equal(result.status, "accepted");
  const { rows } = await t.pool.query(
    `select tableoid::regclass::text as part from ${t.ledger.s}.event_bodies where dedupe_key = 'evt_no_partition'`,
  );
  assert.match(rows[0].part, /event_bodies_default$/);
  // The default partition now holds a row of today (unless the clock passed midnight meanwhile): making today's
  // partition is skipped, not an error, and claims go on.
  const made = await t.pool.query(`select ${t.ledger.s}.make_body_partitions(now(), 1) as made`);
  assert.equal(made.rows[0].made, dayName(0) === today ? 0 : 1);
  assert.equal((await claimEvent(t.pool, t.ledger, input("evt_after"))).status, "accepted");
  assert.equal((await claimEvent(t.pool, t.ledger, input("evt_no_partition"))).status, "duplicate");
});
