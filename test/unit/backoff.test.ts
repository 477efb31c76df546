import assert from "node:assert/strict";
import { test } from "node:test";
import { defaultRetryPolicy, type RetryPolicy, retryDelay } from "hookledger";

const policy: RetryPolicy = { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 60_000 };
const nominal = (attempt: number) => Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));

test("retryDelay grows exponentially with jitter within [nominal/2, nominal] and is capped", () => {
  // The bounds, with the jitter at both ends.
  assert.equal(
    retryDelay(policy, 1, () => 0),
    500,
  );
  assert.equal(
    retryDelay(policy, 1, () => 1),
    1000,
  );
  assert.equal(
    retryDelay(policy, 2, () => 0),
    1000,
  );
  assert.equal(
    retryDelay(policy, 3, () => 0.5),
    3000,
  );
  assert.equal(
    retryDelay(policy, 4, () => 1),
    8000,
  );

  // Doubling per attempt while under the cap (attempt 6: 32 s; attempt 7: 64 s > 60 s), then flat at the cap.
  for (let attempt = 1; attempt <= 5; attempt++) {
    assert.equal(
      retryDelay(policy, attempt + 1, () => 0),
      2 * retryDelay(policy, attempt, () => 0),
    );
  }
  assert.equal(nominal(7), 60_000);
  for (const attempt of [7, 8, 20, 100, 1000]) {
    assert.equal(
      retryDelay(policy, attempt, () => 0),
      30_000,
    );
    assert.equal(
      retryDelay(policy, attempt, () => 1),
      60_000,
    );
    assert.ok(Number.isFinite(retryDelay(policy, attempt)));
  }

  // Real jitter: always inside the band, and spread over it.
  for (let attempt = 1; attempt <= 12; attempt++) {
    const samples = Array.from({ length: 500 }, () => retryDelay(policy, attempt));
    for (const d of samples) {
      assert.ok(d >= nominal(attempt) / 2 && d <= nominal(attempt), `attempt ${attempt}: ${d}`);
    }
    assert.ok(new Set(samples).size > 400, `attempt ${attempt}: samples are not jittered`);
    const spread = Math.max(...samples) - Math.min(...samples);
    assert.ok(spread > nominal(attempt) * 0.4, `attempt ${attempt}: spread ${spread} is too narrow`);
  }
});

test("retryDelay treats attempt 0 or less like the first and defaults to 1 s doubling up to 1 h", () => {
  assert.equal(
    retryDelay(policy, 0, () => 1),
    1000,
  );
  assert.equal(
    retryDelay(policy, -3, () => 1),
    1000,
  );
  assert.deepEqual(defaultRetryPolicy, { maxAttempts: 10, baseDelayMs: 1000, maxDelayMs: 3_600_000 });
  assert.equal(
    retryDelay(defaultRetryPolicy, 3, () => 0),
    2000,
  );
  assert.equal(
    retryDelay(defaultRetryPolicy, 3, () => 1),
    4000,
  );
  assert.equal(
    retryDelay(defaultRetryPolicy, 30, () => 1),
    3_600_000,
  );
});
