/**
 * Origin latency is counted in fixed buckets (upper bounds in ms), so recording is one index lookup
 * and a percentile is read back as the bound of the bucket it falls in: coarse, but bounded and
 * allocation-free.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, Infinity];

export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length;

export function latencyBucket(ms: number): number {
  let index = 0;
  while (ms > LATENCY_BOUNDS_MS[index]!) index += 1;
  return index;
}

/**
 * The bound of the bucket holding the `quantile` of `count` observations stored in
 * `counts[offset .. offset + LATENCY_BUCKETS)`; undefined without observations. The last bucket has
 * no bound: it reads as the last finite one.
 */
export function latencyQuantile(counts: ArrayLike<number>, offset: number, quantile: number): number | undefined {
  let total = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i += 1) total += counts[offset + i]!;
  if (total === 0) return undefined;
  const rank = Math.ceil(quantile * total);
  let seen = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i += 1) {
    seen += counts[offset + i]!;
    if (seen >= rank) return Math.min(LATENCY_BOUNDS_MS[i]!, LATENCY_BOUNDS_MS[LATENCY_BUCKETS - 2]!);
  }
  return undefined;
}

export function increment(counts: Uint32Array, index: number): void {
  counts[index] = counts[index]! + 1;
}
