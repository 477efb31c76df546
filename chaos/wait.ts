/**
 * Polls `check` every `stepMs` until it holds (true) or `deadlineMs` has passed (false). A check that throws counts
 * as not yet: the servers it asks may be restarting.
 */
export async function until(
  check: () => Promise<boolean>,
  deadlineMs: number,
  stepMs = 250,
): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return true;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
  return false;
}
