/**
 * Group commit for one kind of write: `run` takes a batch and answers each item in order. The first item is written
 * at once; items arriving while a batch is being written wait for it and go together in the next (at most `max`),
 * so a busy sender writes once per round trip rather than once per item, and an idle one adds no delay. A failed
 * batch rejects each of its items.
 *
 * @example
 * const record = grouped((items) => recordForwardsSent(pool, ledger, items), 256);
 * const recorded = await record({ message, call });
 */
export function grouped<I, R>(
  run: (items: readonly I[]) => Promise<readonly R[]>,
  max: number,
): (item: I) => Promise<R> {
  let waiting: { item: I; resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let writing = false;
  const drain = async () => {
    writing = true;
    while (waiting.length > 0) {
      const batch = waiting.slice(0, max);
      waiting = waiting.slice(max);
      try {
        const results = await run(batch.map((w) => w.item));
        for (const [i, w] of batch.entries()) w.resolve(results[i] as R);
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    writing = false;
  };
  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!writing) void drain();
    });
}
