/**
 * The nearest-rank percentile `p` (0–100) of `values`; NaN when there are none. Sorts a copy.
 *
 * @example
 * percentile([3, 1, 2], 50); // 2
 */
export function percentile(values: ArrayLike<number>, p: number): number {
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/**
 * The median of `values` (the mean of the middle two for an even count); NaN when there are none.
 *
 * @example
 * median([4, 1, 3, 2]); // 2.5
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
