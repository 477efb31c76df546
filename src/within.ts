/**
 * Whether `work` settles within `ms` (it keeps running either way): how `stop(graceMs)` waits for work in flight.
 *
 * @example
 * if (!(await finishedWithin(Promise.all(running), 10_000))) abort.abort();
 */
export async function finishedWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const result = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    timeout,
  ]);
  clearTimeout(timer);
  return result;
}
