import assert from "node:assert/strict";
import { test } from "node:test";
import { encodeVersion, versionUnitOf } from "../../src/ledger/version.js";

test("encodeVersion keeps numbers and numeric strings as given (extract(epoch) stays in seconds)", () => {
  assert.deepEqual(encodeVersion(1704067210, "ms"), { ok: true, version: "1704067210" });
  assert.deepEqual(encodeVersion("1704067210.600000", undefined), { ok: true, version: "1704067210.600000" });
  assert.deepEqual(encodeVersion(12n, "s"), { ok: true, version: "12" });
});

test("encodeVersion turns a Date or an ISO 8601 string into ms, or floored seconds for Stripe", () => {
  const at = "2024-01-01T00:00:10.600Z";
  assert.deepEqual(encodeVersion(new Date(at), "ms"), { ok: true, version: "1704067210600" });
  assert.deepEqual(encodeVersion(at, "ms"), { ok: true, version: "1704067210600" });
  assert.deepEqual(encodeVersion(new Date(at), versionUnitOf("stripe")), { ok: true, version: "1704067210" });
  assert.equal(versionUnitOf("shopify"), "ms");
});

test("encodeVersion refuses a date without a unit and text that is neither a number nor a date", () => {
  assert.deepEqual(encodeVersion(new Date(0), undefined), { ok: false, reason: "unit_missing" });
  for (const bad of ["active", "May 3", "", Number.NaN, Number.POSITIVE_INFINITY, new Date("x"), {}]) {
    assert.deepEqual(encodeVersion(bad, "ms"), { ok: false, reason: "not_a_version" }, String(bad));
  }
});
