// The receiver's memory of duplicate bodies (src/edge/known-bodies.ts): what a full memory keeps and lets go.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createHash } from "node:crypto";
import { knownBodies } from "../../src/edge/known-bodies.js";

const sha = (i: number) => createHash("sha256").update(`body ${i}`).digest("hex");

const event = (i: number) => ({ dedupeKey: `evt_${i}`, type: "invoice.paid" });
const held = (bodies: ReturnType<typeof knownBodies>, n: number) =>
  Array.from({ length: n }, (_, i) => bodies.get("stripe", sha(i)) !== undefined).filter(Boolean).length;

test("knownBodies: a storm cycling over twice as many bodies as it holds still finds the half it holds", () => {
  let clock = 0;
  const bodies = knownBodies({ max: 100, minHoldMs: 60_000, now: () => clock });
  let found = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 200; i++) {
      clock += 10;
      if (bodies.get("stripe", sha(i))) found++;
      else bodies.add("stripe", sha(i), event(i));
    }
  }
  // Rounds 2–5 find the 100 bodies held in round 1 (first in, first out would find none).
  assert.equal(found, 400);
  assert.equal(held(bodies, 200), 100);
});

test("knownBodies: once held a full minute, the oldest body makes room for a new one", () => {
  let clock = 0;
  const bodies = knownBodies({ max: 2, minHoldMs: 60_000, now: () => clock });
  bodies.add("stripe", sha(0), event(0));
  clock = 30_000;
  bodies.add("stripe", sha(1), event(1));
  clock = 59_999;
  bodies.add("stripe", sha(2), event(2));
  assert.equal(bodies.get("stripe", sha(2)), undefined, "full, and the oldest held less than a minute");
  clock = 60_000;
  bodies.add("stripe", sha(2), event(2));
  assert.deepEqual(bodies.get("stripe", sha(2)), event(2));
  assert.equal(bodies.get("stripe", sha(0)), undefined, "the oldest went");
  assert.deepEqual(bodies.get("stripe", sha(1)), event(1));
});

test("knownBodies: each source has its own bodies", () => {
  const bodies = knownBodies({ max: 1, now: () => 0 });
  bodies.add("stripe", sha(0), event(0));
  bodies.add("paddle", sha(0), event(1));
  assert.deepEqual(bodies.get("stripe", sha(0)), event(0));
  assert.deepEqual(bodies.get("paddle", sha(0)), event(1));
});

test("knownBodies answers as a plain first-in-first-out model with a minimum hold does, over 20,000 random steps", () => {
  let seed = 11;
  const random = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 16) % n;
  };
  for (const max of [1, 3, 50]) {
    let clock = 0;
    const bodies = knownBodies({ max, minHoldMs: 100, now: () => clock });
    const model: { sha: string; at: number; event: ReturnType<typeof event> }[] = [];
    for (let step = 0; step < 20_000; step++) {
      clock += random(20);
      const i = random(max * 3 + 1);
      if (random(2) === 0) {
        assert.deepEqual(
          bodies.get("stripe", sha(i)),
          model.find((m) => m.sha === sha(i))?.event,
          `step ${step}`,
        );
      } else {
        bodies.add("stripe", sha(i), event(i));
        if (model.some((m) => m.sha === sha(i))) continue;
        if (model.length === max) {
          if (clock - (model[0] as { at: number }).at < 100) continue;
          model.shift();
        }
        model.push({ sha: sha(i), at: clock, event: event(i) });
      }
    }
  }
});
