// docs/architecture.md §7: a failed inline run is never swallowed as a duplicate. A handler that throws or answers an error
// leaves the row inline with its lease ended and the error kept; the provider's retry runs the event again (one
// retry among many racing ones), and a database outage answers 503 without running the handler.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createPool } from "hookledger";
import { waitFor } from "../helpers/db.js";
import { ledgerCounts, stripeBody } from "../helpers/http.js";
import { inlineBed } from "../helpers/inline-bed.js";

const bed = inlineBed();

test("a handler that throws → 500 with an empty body, the row stays inline with its lease ended and the error kept; the provider's retry runs it again and settles", async () => {
  let calls = 0;
  const server = await bed.start(bed.guard("enforce"), (_req, res) => {
    calls++;
    if (calls === 1) throw new Error("  downstream timed out\n");
    res.end("ok");
  });
  const payload = stripeBody("evt_throws");
  const failed = await bed.post(server.url, payload);
  assert.equal(failed.status, 500);
  assert.equal(failed.text, "");
  assert.deepEqual(await bed.row("evt_throws"), {
    status: "inline",
    outcome: null,
    attempts: 1,
    last_error: "downstream timed out",
    lease_over: true,
  });
  const retried = await bed.post(server.url, payload, 60);
  assert.equal(retried.text, "ok");
  await bed.settled("evt_throws");
  assert.equal(calls, 2);
  assert.deepEqual(await bed.outcome("evt_throws"), {
    status: "settled",
    outcome: "applied",
    attempts: 2,
    last_error: null,
  });
  // The failed run stays in the event's attempt history (the dashboard's), under its number.
  const { ledger, pool } = bed.t;
  const { rows } = await pool.query(
    `select attempt, error from ${ledger.s}.attempt_errors where dedupe_key = 'evt_throws'`,
  );
  assert.deepEqual(rows, [{ attempt: 1, error: "downstream timed out" }]);
  assert.deepEqual(await ledgerCounts(bed.t.pool, bed.t.ledger, "evt_throws", "stripe"), {
    events: 1,
    duplicates: 0,
  });
});

test("a handler that answers 503 itself fails the run; the retry runs it again and settles", async () => {
  let calls = 0;
  const server = await bed.start(bed.guard("enforce"), (_req, res) => {
    calls++;
    res.writeHead(calls === 1 ? 503 : 204).end();
  });
  const payload = stripeBody("evt_503");
  assert.equal((await bed.post(server.url, payload)).status, 503);
  await waitFor("the failure to be recorded", async () => (await bed.row("evt_503"))?.attempts === 1);
  assert.equal((await bed.row("evt_503"))?.last_error, "the handler answered 503");
  assert.equal((await bed.post(server.url, payload, 60)).status, 204);
  await bed.settled("evt_503");
  assert.equal(calls, 2);
});

test("after a failed run, 10 retries at once → exactly one takes the event over and settles, 9 answer duplicate or 503 in_flight (then duplicate)", async () => {
  let calls = 0;
  const server = await bed.start(bed.guard("enforce"), (_req, res) => {
    calls++;
    if (calls === 1) throw new Error("boom");
    res.end("ok");
  });
  const payload = stripeBody("evt_retry_race");
  assert.equal((await bed.post(server.url, payload)).status, 500);
  const replies = await Promise.all(Array.from({ length: 10 }, () => bed.post(server.url, payload, 60)));
  assert.equal(replies.filter((r) => r.text === "ok").length, 1);
  // A copy decided while the taking run still holds the row is in flight (its run may yet fail), never a 200.
  const others = replies.filter((r) => r.text !== "ok");
  assert.ok(
    others.every((r) => r.text.includes('"duplicate"') || JSON.parse(r.text).error === "in_flight"),
    others.map((r) => `${r.status} ${r.text}`).join("\n"),
  );
  await bed.settled("evt_retry_race");
  for (const _ of others) bed.assertDuplicate(await bed.post(server.url, payload, 50), "evt_retry_race");
  assert.equal(calls, 2);
  assert.equal((await bed.row("evt_retry_race"))?.attempts, 2);
});

test("the database unavailable → 503 with Retry-After, the handler never runs", async () => {
  const down = createPool({ connectionString: "postgres://postgres@127.0.0.1:1/test", role: "ingest" });
  bed.closeLater(() => down.end());
  let calls = 0;
  const server = await bed.start(bed.guard("enforce", { db: down }), (_req, res) => {
    calls++;
    res.end("ok");
  });
  const reply = await bed.post(server.url, stripeBody("evt_down"));
  assert.equal(reply.status, 503);
  assert.equal(reply.headers["retry-after"], "5");
  assert.ok(reply.ms < 2000, `answered after ${Math.round(reply.ms)} ms`);
  assert.equal(calls, 0);
});
