// The old generation's growth cap that `hookledger serve` and `worker` set in-process (src/cli/old-generation.ts).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { CliError } from "../../src/cli/errors.js";
import { heapGrowingFlag } from "../../src/cli/old-generation.js";

test("heapGrowingFlag: 30 % by default, HOOKLEDGER_HEAP_GROWING_PERCENT chooses, 0 or node's own flag leaves V8 alone", () => {
  assert.equal(heapGrowingFlag({}, []), "--heap-growing-percent=30");
  assert.equal(heapGrowingFlag({ HOOKLEDGER_HEAP_GROWING_PERCENT: " " }, []), "--heap-growing-percent=30");
  assert.equal(heapGrowingFlag({ HOOKLEDGER_HEAP_GROWING_PERCENT: "50" }, []), "--heap-growing-percent=50");
  assert.equal(heapGrowingFlag({ HOOKLEDGER_HEAP_GROWING_PERCENT: "0" }, []), undefined);
  assert.equal(heapGrowingFlag({}, ["--heap-growing-percent=80"]), undefined);
  assert.equal(heapGrowingFlag({}, ["--heap_growing_percent=80"]), undefined);
  for (const bad of ["lots", "-1", "1.5", "1001"]) {
    assert.throws(
      () => heapGrowingFlag({ HOOKLEDGER_HEAP_GROWING_PERCENT: bad }, []),
      (error: unknown) =>
        error instanceof CliError &&
        error.exitCode === 2 &&
        error.message.includes(`HOOKLEDGER_HEAP_GROWING_PERCENT must be a whole number`) &&
        error.message.includes(`got '${bad}'`),
    );
  }
});

// A process keeping ~30 MB live while batches of objects live long enough to be promoted, then die: the largest
// old space it sees, with the cap applied as `serve` applies it (in-process, after start) or turned off.
function largestOldSpaceMB(percent: string): number {
  const script = `
    import { getHeapSpaceStatistics } from "node:v8";
    import { capOldGeneration } from "./src/cli/old-generation.ts";
    capOldGeneration("serve");
    const live = [];
    for (let i = 0; i < 400_000; i++) live.push({ i, s: "live-" + i });
    let largest = 0;
    const held = [];
    for (let round = 0; round < 3000; round++) {
      const batch = [];
      for (let j = 0; j < 2000; j++) batch.push({ j, s: "g-" + round + "-" + j });
      held.push(batch);
      if (held.length > 40) held.shift();
      if (round % 10 === 0) {
        const old = getHeapSpaceStatistics().find((s) => s.space_name === "old_space");
        largest = Math.max(largest, old.space_size);
      }
    }
    console.log(Math.round(largest / 1048576), live.length);
  `;
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    env: { ...process.env, HOOKLEDGER_HEAP_GROWING_PERCENT: percent },
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(run.status, 0, run.stderr);
  return Number(run.stdout.trim().split(" ")[0]);
}

test("capOldGeneration keeps the old space near what stays live, where V8's own growth lets it reach several times that", (t) => {
  const capped = largestOldSpaceMB("");
  const own = largestOldSpaceMB("0");
  // Node 20 on the 2-core bench machine: 68–69 MB capped, 180–182 MB uncapped. Node 24's V8 kept this process at
  // 34 MB by itself (34 MB capped too): there the cap has nothing to take, and only the bound is checked. Under a
  // loaded CI run V8's own growth reached only 107 MB (72 capped): the ratio is checked where it grew 5× past live.
  assert.ok(capped < 100, `capped: ${capped} MB of old space for ~30 MB live`);
  if (own >= 150) assert.ok(capped < own * 0.6, `capped ${capped} MB against ${own} MB uncapped`);
  else
    t.diagnostic(
      `this V8 keeps the old space near what is live by itself: ${own} MB uncapped, ${capped} capped`,
    );
});
