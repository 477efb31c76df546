// docs/architecture.md §8: a pruned key is never claimed again while its tombstone lives, whatever the interleaving.
// The dangerous one: a claim whose snapshot predates the tombstone's commit (so its tombstone check passes) and
// whose index probe runs after the row's delete (so nothing conflicts). The window is widened on purpose: a
// BEFORE INSERT trigger on `events` (between the claim's check and its probe) stops the claim at a gate the test
// holds while the whole prune runs.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { after, before, test } from "node:test";
import { type PoolClient, runPrune } from "hookledger";
import pg from "pg";
import { claimInline } from "../../src/ledger/inline-claim.js";
import { freshLedger, type TestLedger, waitFor } from "../helpers/db.js";
import { claimTestEvent } from "../helpers/events.js";
import { ledgerCounts } from "../helpers/http.js";

const DAY = 86_400_000;
const GATE = randomInt(1, 2 ** 31 - 1);
let t: TestLedger;
let gate: PoolClient;

before(async () => {
  t = await freshLedger();
  const { s } = t.ledger;
  await t.pool.query(`create function ${s}.claim_gate() returns trigger language plpgsql as $$
begin
  if new.dedupe_key like 'gated-%' then perform pg_advisory_xact_lock_shared(${GATE}); end if;
  return new;
end $$`);
  await t.pool.query(
    `create trigger claim_gate before insert on ${s}.events for each row execute function ${s}.claim_gate()`,
  );
  gate = await t.pool.connect();
});
after(async () => {
  gate.release();
  await t.drop();
});

async function settledLongAgo(source: string, id: string): Promise<void> {
  await t.pool.query(
    `update ${t.ledger.s}.events set status = 'settled', outcome = 'applied',
       settled_at = now() - interval '100 days', received_at = now() - interval '101 days'
     where source = $1::text and dedupe_key = $2::text`,
    [source, id],
  );
}

/** Runs `claim` stopped inside its insert (after its tombstone check) while the whole prune of `source` runs. */
async function claimAcrossPrune<T>(source: string, provider: string, claim: () => Promise<T>): Promise<T> {
  await gate.query("select pg_advisory_lock($1::bigint)", [GATE]);
  let claiming: Promise<T> | undefined;
  try {
    claiming = claim();
    claiming.catch(() => {});
    await waitFor("the claim to stop at the gate", async () => {
      const { rows } = await t.pool.query<{ n: number }>(
        `select count(*)::int as n from pg_locks
         where locktype = 'advisory' and not granted and classid = 0 and objid = $1::bigint::oid`,
        [GATE],
      );
      return (rows[0]?.n ?? 0) > 0;
    });
    const report = await runPrune(t.pool, t.ledger, {
      sources: [{ name: source, provider }],
      olderThanMs: 90 * DAY,
      tombstonesOlderThanMs: 365 * DAY,
    });
    assert.equal(report.pruned, 1);
  } finally {
    await gate.query("select pg_advisory_unlock($1::bigint)", [GATE]);
  }
  return claiming;
}

test("a claim of a key pruned while the claim runs answers duplicate and never inserts the event again", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { source: "s1", id: "gated-1", body: '{"v":1}' });
  await settledLongAgo("s1", "gated-1");
  const claimed = await claimAcrossPrune("s1", "stripe", () =>
    claimTestEvent(ingest, t.ledger, { source: "s1", id: "gated-1", body: '{"v":1}' }),
  );
  assert.deepEqual(claimed, { status: "duplicate", id: "gated-1", bodyMismatch: false });
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "gated-1", "s1"), { events: 0, duplicates: 0 });
});

test("a GitHub body re-sent under a new id while its event is pruned answers duplicate with the first id, no row", async () => {
  const ingest = t.newPool("ingest");
  const body = '{"ref":"refs/heads/main","after":"def"}';
  await claimTestEvent(ingest, t.ledger, { source: "gh", id: "gated-guid-1", body, dedupeOnBodyHash: true });
  await settledLongAgo("gh", "gated-guid-1");
  const claimed = await claimAcrossPrune("gh", "github", () =>
    claimTestEvent(ingest, t.ledger, { source: "gh", id: "gated-guid-2", body, dedupeOnBodyHash: true }),
  );
  assert.deepEqual(claimed, { status: "duplicate", id: "gated-guid-1", bodyMismatch: false });
  const { rows } = await t.pool.query(`select dedupe_key from ${t.ledger.s}.events where source = 'gh'`);
  assert.deepEqual(rows, []);
});

test("an inline claim of a key pruned while the claim runs answers duplicate, not in flight, and inserts nothing", async () => {
  const ingest = t.newPool("ingest");
  await claimTestEvent(ingest, t.ledger, { source: "in", id: "gated-inline" });
  await settledLongAgo("in", "gated-inline");
  const body = Buffer.from(JSON.stringify({ id: "gated-inline" }));
  const event = {
    dedupeKey: "gated-inline",
    type: "test.event",
    payload: { id: "gated-inline" },
    dedupeOnBodyHash: false,
  };
  const claimed = await claimAcrossPrune("in", "stripe", () =>
    claimInline(ingest, t.ledger, { source: "in", event, body, headers: {}, secretIndex: 0 }, 60_000),
  );
  assert.deepEqual(claimed, {
    status: "duplicate",
    id: "gated-inline",
    bodyMismatch: false,
    inFlight: false,
  });
  assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "gated-inline", "in"), { events: 0, duplicates: 0 });
});

test("on an app's own pg pool (the claim in its own transaction) the raced claim answers duplicate too", async () => {
  const appPool = new pg.Pool({ connectionString: t.url, max: 2 });
  try {
    await claimTestEvent(appPool, t.ledger, { source: "app", id: "gated-app" });
    await settledLongAgo("app", "gated-app");
    const claimed = await claimAcrossPrune("app", "stripe", () =>
      claimTestEvent(appPool, t.ledger, { source: "app", id: "gated-app" }),
    );
    assert.deepEqual(claimed, { status: "duplicate", id: "gated-app", bodyMismatch: false });
    assert.deepEqual(await ledgerCounts(t.pool, t.ledger, "gated-app", "app"), { events: 0, duplicates: 0 });
  } finally {
    await appPool.end();
  }
});
