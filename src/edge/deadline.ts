/** The deadline passed before the work finished. */
export class DeadlineError extends Error {}

/**
 * Resolves with `work`, or rejects with a {@link DeadlineError} after `ms`. Work that finishes after its deadline
 * is reported to `onLate` (with its outcome) instead of being forgotten.
 *
 * @example
 * const claim = await withDeadline(claimEvent(pool, ledger, input), 1800, (late) => log.warn(late, "late claim"));
 */
export async function withDeadline<T>(
  work: Promise<T>,
  ms: number,
  onLate: (outcome: { result?: T; error?: string }) => void,
): Promise<T> {
  let late = false;
  work.then(
    (result) => late && onLate({ result }),
    (error: Error) => late && onLate({ error: error.message }),
  );
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      late = true;
      reject(new DeadlineError(`took over ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
