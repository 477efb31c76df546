// memorySeenCache's typed-array store (src/cache/memory.ts): ids and hashes come back exactly as added, through
// collisions, evictions and the index's backward-shift deletion, checked against a plain model of the same policy.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { memorySeenCache } from "hookledger";

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

// The policy in its plainest form: slots in order, a mark per slot, a hand that clears marks until it finds none.
function clockModel(max: number) {
  const slots: { key: string; hash: string; looked: boolean }[] = [];
  let hand = 0;
  const at = (key: string) => slots.findIndex((s) => s.key === key);
  return {
    peek(key: string) {
      const i = at(key);
      if (i < 0) return undefined;
      (slots[i] as { looked: boolean }).looked = true;
      return slots[i]?.hash;
    },
    add(key: string, hash: string) {
      const i = at(key);
      if (i >= 0) {
        slots[i] = { key, hash, looked: true };
        return;
      }
      if (slots.length < max) {
        slots.push({ key, hash, looked: false });
        return;
      }
      while (slots[hand]?.looked) {
        (slots[hand] as { looked: boolean }).looked = false;
        hand = (hand + 1) % max;
      }
      slots[hand] = { key, hash, looked: false };
      hand = (hand + 1) % max;
    },
    get size() {
      return slots.length;
    },
  };
}

test("memorySeenCache answers as a plain model of its policy does, over 20,000 random adds and lookups", () => {
  let seed = 7;
  const random = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 16) % n;
  };
  for (const max of [1, 2, 7, 64]) {
    const seen = memorySeenCache({ max });
    const model = clockModel(max);
    for (let step = 0; step < 20_000; step++) {
      // Few distinct ids and sources, so that probes collide, ids come back after eviction and hashes change.
      const source = random(3) === 0 ? "github" : "stripe";
      const id = `evt_${random(max * 3 + 2)}`;
      const key = `${source}\0${id}`;
      if (random(2) === 0) {
        const hash = sha(`${key}/${random(3)}`);
        seen.add(source, id, hash);
        model.add(key, hash);
      } else {
        assert.equal(seen.peek(source, id), model.peek(key), `max ${max}, step ${step}: ${source} ${id}`);
      }
      assert.equal(seen.size, model.size);
    }
  }
});

test("memorySeenCache keeps the last max ids of a run it was never asked about, and knows none of the earlier", () => {
  const seen = memorySeenCache({ max: 1000 });
  for (let i = 0; i < 5000; i++) seen.add("stripe", `evt_${i}`, sha(String(i)));
  assert.equal(seen.size, 1000);
  for (let i = 0; i < 5000; i++) {
    assert.equal(seen.peek("stripe", `evt_${i}`), i >= 4000 ? sha(String(i)) : undefined, `evt_${i}`);
  }
});

test("memorySeenCache keeps ids up to 48 UTF-8 bytes, non-ASCII included, and leaves longer ids, ids with surrogates and non-hex hashes to Postgres", () => {
  const seen = memorySeenCache();
  const long48 = "é".repeat(24); // 48 bytes
  const long49 = `${long48}x`;
  seen.add("stripe", long48, sha("a"));
  seen.add("stripe", long49, sha("b"));
  seen.add("stripe", "evt_upper", sha("c").toUpperCase());
  assert.equal(seen.peek("stripe", long48), sha("a"));
  assert.equal(seen.peek("stripe", "é".repeat(23)), undefined, "a prefix of a held id is another id");
  assert.equal(seen.peek("stripe", long49), undefined);
  assert.equal(
    seen.peek("stripe", "evt_upper"),
    undefined,
    "a hash it cannot give back as it came is not held",
  );
  // UTF-8 would write both lone surrogates as U+FFFD: two ids would be one.
  seen.add("stripe", "evt_\ud800", sha("d"));
  assert.equal(seen.peek("stripe", "evt_\ud801"), undefined);
  assert.equal(seen.peek("stripe", "evt_\ud800"), undefined, "an id with a surrogate is not held");
  assert.equal(seen.size, 1);
});
