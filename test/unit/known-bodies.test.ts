// The receiver's memory of duplicate bodies (src/edge/known-bodies.ts): what a full memory keeps and lets go.
import assert from "node:assert/strict";
import { test } from "node:test";
import { knownBodies } from "../../src/edge/known-bodies.js";

const event = (i: number) => ({ dedupeKey: `evt_${i}`, type: "invoice.paid" });
const held = (bodies: ReturnType<typeof knownBodies>, n: number) =>
  Array.from({ length: n }, (_, i) => bodies.get("stripe", `sha_${i}`) !== undefined).filter(Boolean).length;

test("knownBodies: a storm cycling over twice as many bodies as it holds still finds the half it holds", () => {
  let clock = 0;
  const bodies = knownBodies({ max: 100, minHoldMs: 60_000, now: () => clock });
  let found = 0;
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 200; i++) {
      clock += 10;
      if (bodies.get("stripe", `sha_${i}`)) found++;
      else bodies.add("stripe", `sha_${i}`, event(i));
    }
  }
  // Rounds 2–5 find the 100 bodies held in round 1 (first in, first out would find none).
  assert.equal(found, 400);
  assert.equal(held(bodies, 200), 100);
});

test("knownBodies: once held a full minute, the oldest body makes room for a new one", () => {
  let clock = 0;
  const bodies = knownBodies({ max: 2, minHoldMs: 60_000, now: () => clock });
  bodies.add("stripe", "sha_0", event(0));
  clock = 30_000;
  bodies.add("stripe", "sha_1", event(1));
  clock = 59_999;
  bodies.add("stripe", "sha_2", event(2));
  assert.equal(bodies.get("stripe", "sha_2"), undefined, "full, and the oldest held less than a minute");
  clock = 60_000;
  bodies.add("stripe", "sha_2", event(2));
  assert.deepEqual(bodies.get("stripe", "sha_2"), event(2));
  assert.equal(bodies.get("stripe", "sha_0"), undefined, "the oldest went");
  assert.deepEqual(bodies.get("stripe", "sha_1"), event(1));
});

test("knownBodies: each source has its own bodies", () => {
  const bodies = knownBodies({ max: 1, now: () => 0 });
  bodies.add("stripe", "sha_0", event(0));
  bodies.add("paddle", "sha_0", event(1));
  assert.deepEqual(bodies.get("stripe", "sha_0"), event(0));
  assert.deepEqual(bodies.get("paddle", "sha_0"), event(1));
});
