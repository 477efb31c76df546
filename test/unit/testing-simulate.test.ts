import assert from "node:assert/strict";
import { test } from "node:test";
import { githubProvider } from "hookledger";
import { simulateProvider } from "hookledger/testing";

const SECRET = "github-simulate";
const events = Array.from({ length: 12 }, (_, i) => ({
  body: { action: "opened", number: i },
  type: "issues",
}));

/** A target that verifies like the receiver and records each delivery's id and number. */
function recorder(answer: (number: number, attempt: number) => number = () => 200) {
  const seen: { id: string; number: number }[] = [];
  const tries = new Map<number, number>();
  const target = async (request: Request) => {
    const body = new Uint8Array(await request.arrayBuffer());
    const result = githubProvider().verify({
      body,
      headers: request.headers,
      secrets: [SECRET],
      now: Date.now(),
    });
    if (!result.ok || !("event" in result)) return new Response(null, { status: 401 });
    const { number } = result.event.payload as { number: number };
    seen.push({ id: result.event.dedupeKey, number });
    const attempt = (tries.get(number) ?? 0) + 1;
    tries.set(number, attempt);
    return new Response(null, { status: answer(number, attempt) });
  };
  return { seen, target };
}

test("simulateProvider gives every copy of an event the same delivery id, and distinct events distinct ids", async () => {
  const { seen, target } = recorder();
  const report = await simulateProvider({
    events,
    target,
    sign: { provider: "github", secret: SECRET },
    duplicates: { rate: 1, copies: 2 },
  });
  assert.equal(report.duplicatesSent, 24);
  assert.equal(seen.length, 36);
  const idOf = new Map<number, Set<string>>();
  for (const s of seen) idOf.set(s.number, (idOf.get(s.number) ?? new Set()).add(s.id));
  assert.ok([...idOf.values()].every((ids) => ids.size === 1));
  assert.equal(new Set(seen.map((s) => s.id)).size, 12);
});

test("simulateProvider: the same seed gives the same order, another seed another, shuffle false the listed one", async () => {
  const run = async (seed: number, shuffle = true) =>
    (
      await simulateProvider({
        events,
        target: recorder().target,
        sign: { provider: "github", secret: SECRET },
        seed,
        shuffle,
        concurrency: 1,
      })
    ).order;
  assert.deepEqual(await run(5), await run(5));
  assert.notDeepEqual(await run(5), await run(6));
  const listed = await run(5, false);
  assert.deepEqual(
    listed,
    [...listed].sort((a, b) => a - b),
  );
});

test("simulateProvider reports an event that never got a 2xx after maxAttempts, with its last status", async () => {
  const { target } = recorder((number) => (number === 3 ? 500 : 200));
  const report = await simulateProvider({
    events,
    target,
    sign: { provider: "github", secret: SECRET },
    duplicates: { rate: 0 },
    retry: { maxAttempts: 3, baseDelayMs: 1 },
  });
  assert.equal(report.delivered, 11);
  assert.deepEqual(report.undelivered, [{ index: 3, lastStatus: 500 }]);
  assert.deepEqual(report.statuses, { 200: 11, 500: 3 });
});

test("simulateProvider backs off exponentially between retries", async () => {
  const times: number[] = [];
  const started = Date.now();
  await simulateProvider({
    events: events.slice(0, 1),
    target: async () => {
      times.push(Date.now() - started);
      return new Response(null, { status: 503 });
    },
    sign: { provider: "github", secret: SECRET },
    duplicates: { rate: 0 },
    retry: { maxAttempts: 4, baseDelayMs: 40, maxDelayMs: 10_000 },
  });
  const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
  assert.equal(gaps.length, 3);
  const [first = 0, second = 0, third = 0] = gaps;
  assert.ok(first >= 38 && second >= 78 && third >= 158, `gaps ${gaps}`);
});

test("simulateProvider counts a refused connection as status 0 and retries it", async () => {
  const report = await simulateProvider({
    events: events.slice(0, 2),
    target: "http://127.0.0.1:9/webhooks/github",
    sign: { provider: "github", secret: SECRET },
    duplicates: { rate: 0 },
    retry: { maxAttempts: 2, baseDelayMs: 1 },
  });
  assert.deepEqual(report.statuses, { 0: 4 });
  assert.equal(report.undelivered.length, 2);
});
