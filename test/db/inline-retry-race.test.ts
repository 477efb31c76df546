// docs/architecture.md §7: whatever the interleaving of a provider's retry with a failing first run, a delivery is
// never answered 200 unless its event ran to completion or will run again. The window (the retry has found the
// first run's lease still on the row; the run then fails before the retry answers) is widened on purpose: a
// trigger on `duplicates` stops the retry's duplicate count, at a gate the test holds or in a pg_sleep.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { test } from "node:test";
import type { NodeGuardedHandler, PoolClient } from "hookledger";
import { waitFor } from "../helpers/db.js";
import { postStripe, type Reply, stripeBody } from "../helpers/http.js";
import { inlineBed } from "../helpers/inline-bed.js";

const bed = inlineBed();
const GATE = randomInt(1, 2 ** 31 - 1);

let widening: Promise<void> | undefined;

// Created on first use: the bed's own hook creates the ledger.
function installWidening(): Promise<void> {
  widening ??= createWidening();
  return widening;
}

async function createWidening(): Promise<void> {
  const { s } = bed.t.ledger;
  // Off by default: the race tests switch it to 'gate' or 'sleep' per test.
  await bed.t.pool.query(`create table ${s}.race_widening (how text not null)`);
  await bed.t.pool.query(`insert into ${s}.race_widening values ('off')`);
  await bed.t.pool.query(`create function ${s}.widen_race() returns trigger language plpgsql as $$
begin
  case (select how from ${s}.race_widening)
    when 'gate' then perform pg_advisory_xact_lock_shared(${GATE});
    when 'sleep' then perform pg_sleep(0.01);
    else null;
  end case;
  return new;
end $$`);
  await bed.t.pool.query(
    `create trigger widen_race before insert on ${s}.duplicates for each row execute function ${s}.widen_race()`,
  );
}

async function widen(how: "gate" | "sleep" | "off"): Promise<void> {
  await installWidening();
  await bed.t.pool.query(`update ${bed.t.ledger.s}.race_widening set how = $1::text`, [how]);
}

/** A handler whose first run of each event waits until the test lets it fail; later runs succeed. */
function failingFirstRuns() {
  const started = new Map<string, () => void>();
  const runs = new Map<string, number>();
  const handler: NodeGuardedHandler = async (_req, res, ticket) => {
    const id = ticket.event.dedupeKey;
    const run = (runs.get(id) ?? 0) + 1;
    runs.set(id, run);
    if (run === 1) {
      await new Promise<void>((resolve) => started.set(id, resolve));
      throw new Error("downstream timed out");
    }
    res.end("ok");
  };
  return { handler, started, runs };
}

/**
 * The provider: re-sends until it is answered 2xx, then forgets the event. A run answers before it settles, so
 * when a run answered, its settle is awaited; a duplicate answer must find the event settled already.
 */
async function retryUntil2xx(id: string, send: () => Promise<Reply>, first: Promise<Reply>): Promise<void> {
  let reply = await first;
  for (let tries = 0; reply.status >= 300; tries++) {
    assert.ok(tries < 20, `still ${reply.status} after 20 retries: ${reply.text}`);
    reply = await send();
  }
  if (reply.text === "ok") await bed.settled(id);
}

async function lost(ids: readonly string[]): Promise<string[]> {
  const { rows } = await bed.t.pool.query<{ dedupe_key: string }>(
    `select dedupe_key from ${bed.t.ledger.s}.events
     where source = 'stripe' and dedupe_key = any($1::text[]) and status <> 'settled'`,
    [ids],
  );
  return rows.map((r) => r.dedupe_key).sort();
}

test("enforce: a retry that finds the lease, then sees the first run fail before it answers, is never a 200 duplicate (gated, 20 events)", async () => {
  const { handler, started } = failingFirstRuns();
  const server = await bed.start(bed.guard("enforce"), handler);
  const ids = Array.from({ length: 20 }, (_, i) => `evt_gate_${i}`);
  let gate: PoolClient | undefined;
  try {
    gate = await bed.t.pool.connect();
    await widen("gate");
    for (const id of ids) {
      const payload = stripeBody(id);
      const send = () => post(server.url, payload);
      const firstRun = send();
      await waitFor(`${id}'s first run to start`, async () => started.has(id), 10_000);
      await gate.query("select pg_advisory_lock($1::bigint)", [GATE]);
      const retry = send();
      await waitFor(`${id}'s retry to reach the gate`, () => waitingAtGate(), 10_000);
      started.get(id)?.();
      assert.equal((await firstRun).status, 500);
      await bed.failed(id);
      await gate.query("select pg_advisory_unlock($1::bigint)", [GATE]);
      await retryUntil2xx(id, send, retry);
    }
  } finally {
    await widen("off");
    gate?.release();
  }
  assert.deepEqual(await lost(ids), [], "events answered 200 that never ran to completion");
});

test("enforce: 60 natural races of a retry against a first run failing 0–15 ms after it arrives lose nothing", async () => {
  const { handler, started } = failingFirstRuns();
  const server = await bed.start(bed.guard("enforce"), handler);
  const ids = Array.from({ length: 60 }, (_, i) => `evt_race_${i}`);
  await widen("sleep");
  try {
    await Promise.all(
      ids.map(async (id, i) => {
        await new Promise((r) => setTimeout(r, i * 20));
        const payload = stripeBody(id);
        const send = () => post(server.url, payload);
        const firstRun = send();
        await waitFor(`${id}'s first run to start`, async () => started.has(id), 10_000);
        const retry = send();
        await new Promise((r) => setTimeout(r, randomInt(0, 16)));
        started.get(id)?.();
        await firstRun;
        await retryUntil2xx(id, send, retry);
      }),
    );
  } finally {
    await widen("off");
  }
  assert.deepEqual(await lost(ids), [], "events answered 200 that never ran to completion");
});

async function waitingAtGate(): Promise<boolean> {
  const { rows } = await bed.t.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_locks
     where locktype = 'advisory' and not granted and classid = 0 and objid = $1::bigint::oid`,
    [GATE],
  );
  return (rows[0]?.n ?? 0) > 0;
}

/** A delivery signed a second ago, as a provider signs each retry afresh. */
function post(url: string, payload: string): Promise<Reply> {
  return postStripe(`${url}/webhooks/stripe`, payload, 1);
}
