// The one reading of --since/--until values and durations, shared by the CLI and the replay library.
import assert from "node:assert/strict";
import { test } from "node:test";
import { durationMs, pointInTime } from "../../src/config/duration.js";

const NOW = Date.parse("2026-01-31T12:00:00Z");

test("durationMs reads a whole number and a unit, and nothing else", () => {
  assert.equal(durationMs("90m"), 5_400_000);
  assert.equal(durationMs("7d"), 604_800_000);
  assert.equal(durationMs(" 2w "), 1_209_600_000);
  for (const bad of ["0h", "1.5h", "24", "h", "24x", "-1d", "1234567s", ""]) {
    assert.equal(durationMs(bad), undefined, bad);
  }
});

test("pointInTime reads a duration back from now", () => {
  assert.equal(pointInTime("150m", NOW)?.toISOString(), "2026-01-31T09:30:00.000Z");
  assert.equal(pointInTime("3d", NOW)?.toISOString(), "2026-01-28T12:00:00.000Z");
});

test("pointInTime reads an ISO 8601 date (midnight UTC) or time", () => {
  assert.equal(pointInTime("2024-05-01", NOW)?.toISOString(), "2024-05-01T00:00:00.000Z");
  assert.equal(pointInTime("2024-05-01T12:30:00Z", NOW)?.toISOString(), "2024-05-01T12:30:00.000Z");
  assert.equal(pointInTime("2024-05-01T12:30:00+02:00", NOW)?.toISOString(), "2024-05-01T10:30:00.000Z");
});

test("pointInTime returns undefined for anything else", () => {
  for (const bad of ["yesterday", "24x", "1714564800", "05/01/2024", "2024-13-45", ""]) {
    assert.equal(pointInTime(bad, NOW), undefined, bad);
  }
});
